"""`create` from its options: the config and the pod template checked, the manifest made
(or only shown, with --dry-run), the context resolved through the safety guard, the
change announced, then `lab.create`."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsightlab import assets, configure
from nsightlab.cluster import lab_lifecycle, labmanifest
from nsightlab.cluster.connect import connect
from nsightlab.cluster.kubeconfig import load_kubeconfig
from nsightlab.cluster.safety import Intent, confirm_change, resolve_context
from nsightlab.errors import UsageError
from nsightlab.userconfig import LoadedConfig, ensure_home, load_config

if TYPE_CHECKING:
    from nsightlab.cluster.safety import ResolvedContext
    from nsightlab.env import Env
    from nsightlab.k8s.labpod import LabPod


@dataclass(frozen=True)
class CreateOptions:
    """What `nsightlab create` was given."""

    context: str | None
    kubeconfig: Path | None
    namespace: str | None
    config_path: Path | None
    manifest: Path | None = None
    timeout: float = 600
    wait: bool = True
    profiling_caps: bool = False
    recreate: bool = False
    yes: bool = False


def _loaded(opts: CreateOptions) -> tuple[LoadedConfig, dict[str, Any]]:
    """The config (which must exist, without placeholders) and the pod template."""
    loaded = load_config(opts.config_path)
    if not loaded.exists:
        raise UsageError(
            f"there is no config file yet ({loaded.path}): the lab pod needs an image, and --context stg an alias",
            hint="Write one with `nsightlab init`: it asks for the context, the namespace and the image (or pass "
            "--context, --namespace, --image).",
        )
    # a placeholder from an old starter config must not reach a manifest, printed or sent
    configure.refuse_placeholders(
        loaded,
        alias=opts.context if opts.context in loaded.config.clusters else None,
        namespace_given=opts.namespace is not None,
    )
    return loaded, labmanifest.load_template(opts.manifest or assets.pod_template())


def dry_run(opts: CreateOptions) -> dict[str, Any]:
    """The manifest `create` would send, sending nothing (the namespace from --context
    when one is given, else -n, else 'default')."""
    loaded, template = _loaded(opts)
    ns = opts.namespace or "default"
    if opts.context:
        kc = load_kubeconfig(opts.kubeconfig)
        read = Intent.READ
        ns = resolve_context(
            opts.context, config=loaded.config, kubeconfig=kc, intent=read, namespace=opts.namespace
        ).namespace
    return labmanifest.build_manifest(template, loaded.config, namespace=ns, profiling_caps=opts.profiling_caps)


def again(opts: CreateOptions, ctx: ResolvedContext) -> tuple[str, str]:
    """`cleanup` and this `create` as a hint writes them: --config kept (unless it came
    from NSIGHTLAB_CONFIG, which this shell still has), context and namespace filled in,
    and the options that shape the pod (--manifest, --profiling-caps) kept."""
    given = opts.config_path is not None and str(opts.config_path) != os.environ.get("NSIGHTLAB_CONFIG")
    prefix = "nsightlab " + (f"--config {shlex.quote(str(opts.config_path))} " if given else "")
    create = f"{prefix}create {ctx.cli_args}"
    if opts.manifest is not None:
        create += f" --manifest {shlex.quote(str(opts.manifest))}"
    cleanup = f"{prefix}{lab_lifecycle.cleanup_command(ctx).removeprefix('nsightlab ')}"
    return cleanup, create + (" --profiling-caps" if opts.profiling_caps else "")


def create_lab(env: Env, opts: CreateOptions) -> LabPod:
    """Create (or reuse, or with --recreate replace) the lab pod and wait for it."""
    _, template = _loaded(opts)
    ensure_home()  # the session must be recordable before a GPU is taken
    if opts.profiling_caps:
        env.warn(
            "--profiling-caps adds CAP_SYS_ADMIN to the lab pod: it weakens isolation; use it only with your "
            "platform team's OK."
        )
    with connect(
        opts.context,
        opts.kubeconfig,
        config_path=opts.config_path,
        intent=Intent.CHANGE,
        namespace=opts.namespace,
        action="create the lab pod",
    ) as c:
        m = labmanifest.build_manifest(
            template, c.config, namespace=c.ctx.namespace, profiling_caps=opts.profiling_caps
        )
        what = f"create lab pod {m['metadata']['name']} ({c.config.lab.gpus} GPU on a {c.config.lab.instance_type})"
        if opts.recreate:
            what = f"replace your lab pod with {what[len('create ') :]}"
        confirm_change(env, c.ctx, what, yes=opts.yes)
        return lab_lifecycle.create(
            env,
            c.kube,
            c.ctx,
            c.config,
            m,
            timeout=opts.timeout,
            wait=opts.wait,
            recreate=opts.recreate,
            again=again(opts, c.ctx),
        )
