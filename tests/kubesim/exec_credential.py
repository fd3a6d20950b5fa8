#!/usr/bin/env python3
"""A stand-in for ``aws eks get-token``: an exec credential plugin for kubeconfigs.

It prints a ``client.authentication.k8s.io/v1beta1`` ExecCredential whose
``status.token`` is the ``--token`` argument, and appends one line per run to ``--log``
(so a test can prove the client really ran the plugin). Standard library only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--token", required=True)
    parser.add_argument("--log", default=None)
    parser.add_argument("--cluster-name", default="kubesim")
    parser.add_argument("--fail", action="store_true", help="exit 1 with an AWS-like error")
    args = parser.parse_args(argv)
    if args.log:
        with open(args.log, "a", encoding="utf-8") as f:
            f.write(
                json.dumps(
                    {
                        "time": dt.datetime.now(dt.timezone.utc).isoformat(),
                        "cluster": args.cluster_name,
                        "exec_info": bool(os.environ.get("KUBERNETES_EXEC_INFO")),
                    }
                )
                + "\n"
            )
    if args.fail:
        print(
            "An error occurred (ExpiredToken) when calling the GetCallerIdentity operation: "
            "The security token included in the request is expired",
            file=sys.stderr,
        )
        return 255
    expires = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=14)
    json.dump(
        {
            "kind": "ExecCredential",
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "spec": {},
            "status": {
                "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "token": args.token,
            },
        },
        sys.stdout,
    )
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
