"""The lab pod: create, status, shell, copy, cleanup, doctor."""

from pathlib import Path
from typing import Annotated

import typer

from nsightlab.cli.common import (
    STATE,
    ContextOpt,
    JsonOpt,
    KubeconfigOpt,
    NamespaceOpt,
    YesOpt,
    make_env,
    number,
    show,
)
from nsightlab.cluster import lab_lifecycle as labpod
from nsightlab.cluster import labcreate, labmanifest
from nsightlab.cluster import shell as sh
from nsightlab.cluster.connect import connect, lab_pod_name, note_session
from nsightlab.cluster.podlogs import LogText, lab_events, stream_log
from nsightlab.cluster.safety import Intent
from nsightlab.errors import ClusterError
from nsightlab.measure import pod_checks as doc
from nsightlab.measure.cleanup import CleanupOptions, run_cleanup
from nsightlab.measure.labcopy import CopyRequest
from nsightlab.measure.labcopy import copy as copy_files
from nsightlab.present import labview

commands = typer.Typer(rich_markup_mode=None)


@commands.command()
def create(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    manifest: Annotated[
        Path | None, typer.Option("--manifest", help="pod template to fill instead of manifests/pod.yaml.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the final manifest as YAML and send nothing.")
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="seconds to wait for Ready before giving up (exit 5), at least 1.",
            parser=number(minimum=1),
        ),
    ] = 600,
    no_wait: Annotated[
        bool,
        typer.Option(
            "--no-wait",
            help="Create the pod, record the session and return at once; follow it with `nsightlab status` and "
            "`nsightlab events`.",
        ),
    ] = False,
    profiling_caps: Annotated[
        bool,
        typer.Option(
            "--profiling-caps",
            help="Add CAP_SYS_ADMIN so ncu can read GPU counters (weakens isolation: only with your platform team's "
            "OK).",
        ),
    ] = False,
    recreate: Annotated[
        bool,
        typer.Option(
            "--recreate",
            help="Delete your lab pod first (checked as cleanup checks it), then create the configured one: for a "
            "pod that is not what config.yaml asks for.",
        ),
    ] = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Create your GPU lab pod (or reuse it) and wait until it is Ready.

    The pod is the tutorial's: 1 GPU on a g7e.8xlarge, 4 CPU, 24Gi, deleted after 4 h,
    labelled as yours. A lab pod of yours is reused only when it is the one config.yaml
    asks for (name, image, GPUs, CPU, memory, instance type, node selector); otherwise
    create says what differs (exit 2) and --recreate replaces it. Refused on protected
    contexts.

    \b
    Example:
      nsightlab create --context stg
      nsightlab create --context stg --dry-run
      nsightlab create --context stg --no-wait && nsightlab events
      nsightlab create --context stg --recreate
    """
    env = make_env(json_out)
    opts = labcreate.CreateOptions(
        context=context,
        kubeconfig=kubeconfig,
        namespace=namespace,
        config_path=STATE.config_path,
        manifest=manifest,
        timeout=timeout,
        wait=not no_wait,
        profiling_caps=profiling_caps,
        recreate=recreate,
        yes=yes,
    )
    if dry_run:
        m = labcreate.dry_run(opts)
        if env.json:
            env.print_json(m)
        else:
            env.write(labmanifest.manifest_yaml(m))
        return
    result = labcreate.create_lab(env, opts)
    if env.json:
        env.print_json(result)
    elif no_wait and not result.ready:
        labview.lab_pod(env, result, title=f"Lab pod {'reused' if result.reused else 'created'}, not waiting for it")
    else:
        labview.lab_pod(env, result, title="Lab pod ready (reused)" if result.reused else "Lab pod ready")


@commands.command()
def status(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The lab pod: phase, node, GPU, age and time left before it deletes itself.

    \b
    Example:
      nsightlab status
      nsightlab status --context stg --json
    """
    env = make_env(json_out)
    with connect(
        context, kubeconfig, config_path=STATE.config_path, intent=Intent.READ, namespace=namespace, use_session=True
    ) as c:
        note_session(env, c)
        report = labpod.status(c.kube, c.ctx, lab_pod_name(c, require_ready=False), note=env.note)
    show(env, report, labview.status)


@commands.command()
def logs(
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep streaming until Ctrl-C or the container ends.")
    ] = False,
    tail: Annotated[
        int | None,
        typer.Option(
            "--tail",
            metavar="N",
            help="only the last N lines (default: all).",
            parser=number(int, minimum=0),
            show_default=False,
        ),
    ] = None,
    container: Annotated[
        str | None,
        typer.Option("--container", "-c", help="the container (default: the pod's first).", show_default=False),
    ] = None,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """The lab pod's log on stdout, as `kubectl logs` gives it.

    With -f it keeps streaming until Ctrl-C (exit 0) or the container ends. A container
    that has not started has no log yet: exit 5, and `nsightlab events` says why; one
    that has printed nothing says "(no output yet)" on stderr (exit 0).

    \b
    Example:
      nsightlab logs
      nsightlab logs -f --tail 20
      nsightlab logs --context stg --container lab
    """
    env = make_env()
    text = LogText(env.write)
    try:
        with connect(
            context,
            kubeconfig,
            config_path=STATE.config_path,
            intent=Intent.READ,
            namespace=namespace,
            use_session=True,
        ) as c:
            note_session(env, c)
            name = lab_pod_name(c, require_ready=False)
            stream_log(c.kube, c.ctx, name, write=text, container=container, tail=tail, follow=follow)
    except KeyboardInterrupt:
        if not follow:
            raise
        # Ctrl-C is how a followed log is meant to end
    if not text.finish():
        env.note("(no output yet)")


@commands.command()
def events(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The lab pod's Events, as `kubectl describe pod` lists them: type, reason, age,
    where from, message. What the scheduler and the kubelet said while it started.

    \b
    Example:
      nsightlab events
      nsightlab events --context stg --json
    """
    env = make_env(json_out)
    with connect(
        context, kubeconfig, config_path=STATE.config_path, intent=Intent.READ, namespace=namespace, use_session=True
    ) as c:
        note_session(env, c)
        report = lab_events(c.kube, c.ctx, lab_pod_name(c, require_ready=False))
    show(env, report, labview.events)


@commands.command(context_settings={"allow_interspersed_args": False})
def shell(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="a command to run instead of an interactive shell (after --).", show_default=False),
    ] = None,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    stdin: Annotated[bool, typer.Option("--stdin", "-i", help="Pass this terminal's stdin to the command.")] = False,
) -> None:
    """A shell in the lab pod (bash, else sh), or one command with its output streamed.

    The exit code is the remote command's. Refused on protected contexts.

    \b
    Example:
      nsightlab shell
      nsightlab shell -- nvidia-smi
      nsightlab shell -- sh -c 'which nsys ncu nvcc python3'
    """
    env = make_env()
    with connect(
        context,
        kubeconfig,
        config_path=STATE.config_path,
        intent=Intent.CHANGE,
        namespace=namespace,
        use_session=True,
        action="exec into a pod",
    ) as c:
        note_session(env, c)
        pod = lab_pod_name(c)
        if command:
            code = sh.run_command(c.kube, c.ctx.namespace, pod, list(command), forward_stdin=stdin)
        else:
            code = sh.interactive(c.kube, c.ctx.namespace, pod)
    raise typer.Exit(code)


@commands.command()
def copy(
    src: Annotated[str, typer.Argument(help="source: a local path, or :PATH in the pod.")],
    dst: Annotated[str, typer.Argument(help="destination: :PATH in the pod, or a local path.")],
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Copy files or folders into or out of the lab pod, verified by sha256.

    A path in the pod is written :PATH, as with scp; without a leading / it is in the
    pod's working folder (the container's working directory), both ways. Streams
    through tar over exec; local files appear only once complete and verified.

    \b
    Example:
      nsightlab copy lesson1.py :/tmp/
      nsightlab copy :/tmp/l1.nsys-rep .
      nsightlab copy proj :proj
      nsightlab copy :proj ./back
    """
    env = make_env(json_out)
    request = CopyRequest(src, dst, context, kubeconfig, namespace, STATE.config_path)
    show(env, copy_files(env, request), labview.copy_result)


@commands.command()
def cleanup(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    all_mine: Annotated[
        bool, typer.Option("--all-mine", help="Delete every lab pod and every fleet of yours in the namespace.")
    ] = False,
    fleet: Annotated[
        str | None,
        typer.Option(
            "--fleet", metavar="ID", help="Delete fleet ID's Jobs and ConfigMap (not the lab pod).", show_default=False
        ),
    ] = None,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Delete your lab pod and give the GPU back; waits until it is gone.

    Only pods labelled as nsightlab lab pods of yours are ever deleted (and with --fleet
    or --all-mine, only Jobs and ConfigMaps labelled as your fleets'). Without a lab
    session and without --context there is nothing to delete: it says so and exits 0
    (cleaning up twice is fine). Refused on protected contexts.

    \b
    Example:
      nsightlab cleanup
      nsightlab cleanup --context stg --all-mine
      nsightlab cleanup --fleet 3fa2c1
    """
    env = make_env(json_out)
    opts = CleanupOptions(
        context=context,
        kubeconfig=kubeconfig,
        namespace=namespace,
        config_path=STATE.config_path,
        all_mine=all_mine,
        fleet=fleet,
        yes=yes,
    )
    show(env, run_cleanup(env, opts), labview.cleanup)


@commands.command()
def doctor(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Pre-flight checks, each pass/FAIL with the fix, or info: access, every permission
    the lab needs, GPUs, and in the pod nvidia-smi, nsys, ncu, PyTorch, /tmp,
    perf_event_paranoid and RmProfilingAdminOnly.

    A cluster-wide view your account may not read (nodes, the Namespace object) is info:
    the lab runs without it. Exits 4 when a check fails, else 0. Read-only; works on
    protected contexts (without the in-pod checks).

    \b
    Example:
      nsightlab doctor --context stg
    """
    env = make_env(json_out)
    with connect(
        context,
        kubeconfig,
        config_path=STATE.config_path,
        intent=Intent.READ,
        namespace=namespace,
        use_session=True,
        pin_session=False,
    ) as c:
        report = doc.run(c.kube, c.ctx, c.config, session=c.session)
    if env.json:
        env.print_json({**report.model_dump(mode="json"), "ok": not report.failed})
    else:
        labview.doctor(env, report)
    if report.failed:
        raise ClusterError(f"{len(report.failed)} doctor check(s) failed", hint="See the fixes above.")
