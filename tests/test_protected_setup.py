"""Protected contexts where a new user meets them first: `init` (the alias), `doctor` (only
reads: not one POST), and the refusal's hint (never an alias that leads to production)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import DEV_CONTEXT, PRD_CONTEXT, STG_CONTEXT
from kubesim import KubeSim
from labenv import IMAGE, nsl


def _squat_every_g7e_gpu(sim: KubeSim) -> None:
    for node in ("ip-10-0-19-150.ec2.internal", "ip-10-0-83-47.ec2.internal"):  # the two free g7e GPUs
        sim.put(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"squatter-{node[:12]}", "namespace": "serving"},
                "spec": {
                    "nodeName": node,
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                    ],
                },
                "status": {"phase": "Running"},
            }
        )


# ---------------------------------------------------------------------------- init


def test_init_refuses_a_protected_context_for_the_alias(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "new.yaml"
    args = ("--config", str(target), "init", "--context", PRD_CONTEXT, "--namespace", "serving", "--image", IMAGE)
    r = nsl(capsys, *args)
    assert r.code == 3, r
    assert r.err.strip() == (
        f"error: context '{PRD_CONTEXT}' is protected ('{PRD_CONTEXT}' contains the protected token 'prd'): "
        "nsightlab would refuse every change there, so the lab pod could never be made on it. Give the context of "
        "a staging cluster, or pass --protected-ok to have an alias that only reads."
    )
    assert not target.exists() and r.out == ""


def test_init_with_protected_ok_says_every_change_is_refused_and_suggests_no_create(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "new.yaml"
    r = nsl(
        capsys,
        *("--config", str(target), "init", "--context", PRD_CONTEXT, "--namespace", "serving", "--image", IMAGE),
        "--protected-ok",
    )
    assert r.code == 0, r
    assert target.exists() and f'context: "{PRD_CONTEXT}"' in target.read_text()
    assert "every change will be refused there" in r.err and "create" not in r.err.replace("(create,", "")
    assert "doctor --context stg" in r.err
    # what init said holds: create on that alias is refused before any request
    refused = nsl(capsys, "--config", str(target), "create", "--context", "stg", "--yes")
    assert refused.code == 3 and "refusing to create the lab pod on protected context" in refused.err


def test_init_on_a_staging_context_still_suggests_create(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "new.yaml"
    r = nsl(
        capsys, "--config", str(target), "init", "--context", STG_CONTEXT, "--namespace", "ml-lab", "--image", IMAGE
    )
    assert r.code == 0, r
    assert "create --context stg" in r.err and "refused" not in r.err


# ---------------------------------------------------------------------------- doctor


def test_doctor_on_a_protected_context_only_reads(capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim) -> None:
    _squat_every_g7e_gpu(sim)  # what only a lab pod would need is information here, not a failure
    sim.clear_requests()
    r = nsl(capsys, "doctor", "--context", PRD_CONTEXT, "--json")
    assert r.code == 0, r
    assert {q.method for q in sim.requests} == {"GET"}  # not one POST: no access review of any kind
    assert not [q for q in sim.requests if "authorization.k8s.io" in q.path]
    data: dict[str, Any] = json.loads(r.out)
    first = data["checks"][0]
    assert first["name"] == "protected context" and first["ok"] is None
    assert first["detail"].startswith(f"'{PRD_CONTEXT}' contains the protected token 'prd': nsightlab refuses every")
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["permissions"] == {
        "name": "permissions",
        "ok": None,
        "detail": "skipped: each access review is a POST request, and doctor sends none on a protected context",
        "fix": None,
    }
    assert checks["lab pod"]["detail"] == "in-pod checks skipped: nsightlab never execs here"
    assert checks["a free GPU on g7e.8xlarge"]["ok"] is None
    assert data["ok"] and not [c for c in data["checks"] if c["ok"] is False]
    text = nsl(capsys, "doctor", "--context", PRD_CONTEXT)
    assert text.code == 0, text
    assert text.out.splitlines()[1].startswith("info  protected context: ")  # said first, after the heading
    assert "nsightlab create" not in text.out + text.err


def test_doctor_on_a_staging_context_still_reviews_permissions(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    sim.clear_requests()
    r = nsl(capsys, "doctor", "--context", "stg", "--json")
    assert r.code == 0, r
    reviews = [q for q in sim.requests if q.method == "POST" and "selfsubjectaccessreviews" in q.path]
    assert reviews and "protected context" not in r.out


# ---------------------------------------------------------------------------- the refusal's hint


def test_a_refusal_never_suggests_an_alias_that_leads_to_production(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "aliases.yaml"
    cfg.write_text(
        f"clusters:\n  stg:\n    context: {PRD_CONTEXT}\n    namespace: serving\n"
        f"  dev:\n    context: {DEV_CONTEXT}\n    namespace: ml-lab\nlab:\n  image: {IMAGE}\n"
    )
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes")
    assert r.code == 3, r
    line = r.err.strip().splitlines()[-1]
    assert line.endswith("nsightlab only changes non-production clusters; use a staging context (e.g. --context dev).")
    assert "--context stg" not in line
    # with no safe alias, a safe kubeconfig context; never a protected one
    only = tmp_path / "only.yaml"
    only.write_text(f"clusters:\n  stg:\n    context: {PRD_CONTEXT}\nlab:\n  image: {IMAGE}\n")
    r = nsl(capsys, "--config", str(only), "create", "--context", "stg", "--yes")
    assert r.code == 3 and r.err.strip().endswith(f"(e.g. --context {DEV_CONTEXT}).")
