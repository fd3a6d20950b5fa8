"""`init` and `config`: the starter config file and the effective configuration."""

import difflib
import shlex
from pathlib import Path
from typing import Annotated

import typer

from nsightlab import configure
from nsightlab.cli.common import STATE, JsonOpt, KubeconfigOpt, make_env, show
from nsightlab.cluster.kubeconfig import Kubeconfig, load_kubeconfig
from nsightlab.cluster.safety import protection_reason
from nsightlab.errors import ClusterError, SafetyError, UsageError
from nsightlab.present import configview
from nsightlab.present.console import Env
from nsightlab.userconfig import DEFAULT_PROTECTED, load_config

commands = typer.Typer(rich_markup_mode=None)


@commands.command()
def init(
    context: Annotated[
        str | None,
        typer.Option(
            "--context", help="kubeconfig context for the 'stg' alias (asked on a terminal).", show_default=False
        ),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="namespace for the lab pod (asked on a terminal).", show_default=False),
    ] = None,
    image: Annotated[
        str | None,
        typer.Option(
            "--image", help="lab pod image, with nsys, ncu and PyTorch (asked on a terminal).", show_default=False
        ),
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing config file (values not given are kept from it).")
    ] = False,
    protected_ok: Annotated[
        bool,
        typer.Option(
            "--protected-ok",
            help="Accept a protected context (prd, prod, production...) for the alias: nsightlab will only read "
            "there (doctor, explore) and refuse every change.",
        ),
    ] = False,
) -> None:
    """Write a commented starter config.yaml: the 'stg' alias and the tutorial's lab pod.

    It needs the kubeconfig context of your staging cluster, the namespace for the lab
    pod and the image (with nsys, ncu and PyTorch). On a terminal it asks for those not
    given, offering the kubeconfig's contexts; otherwise a missing one is exit 2. A
    protected context is refused (exit 3) unless --protected-ok: nsightlab changes
    nothing there, so a lab pod cannot be made on it.

    \b
    Example:
      nsightlab init --context stg-online-use1 --namespace ml-lab \\
          --image registry.example.com/triton-vllm-container:1.0-1
      nsightlab init --force --image registry.example.com/triton-vllm-container:1.1
    """
    env = make_env()
    target = configure.config_target(STATE.config_path, force=force)
    kept = configure.starter_values(target) if target.exists() else {}
    values = {"context": context, "namespace": namespace, "image": image}
    values = {k: v if v is not None else kept.get(k) for k, v in values.items()}
    kc = _kubeconfig_or_none(kubeconfig)
    if values["context"] is not None:
        _check_context(values["context"], kc)
        _check_protected(values["context"], protected_ok)
    if not all(values.values()):
        _ask_for_missing(env, values, kc, protected_ok=protected_ok)
    path = configure.write_starter_config(STATE.config_path, force=force, **values)
    env.note(f"wrote {path}")
    config_opt = "" if STATE.config_path is None else f"--config {shlex.quote(str(path))} "
    env.note(
        f"next: nsightlab {config_opt}doctor --context {configure.STARTER_ALIAS}    # checks access, GPUs and the image"
    )
    if guarded := _protected(values["context"] or ""):
        env.warn(f"the alias's context is protected ({guarded}): {REFUSED_THERE}")
    else:
        env.note(f"then: nsightlab {config_opt}create --context {configure.STARTER_ALIAS}    # the lab pod")


REFUSED_THERE = (
    "every change will be refused there (create, shell, copy, profile, sweep, ncu, cleanup); doctor and explore only "
    "read"
)


def _protected(context: str) -> str | None:
    """Why the alias's context would be protected (the starter's patterns: the defaults)."""
    return protection_reason(context, list(DEFAULT_PROTECTED))


def _check_protected(context: str, protected_ok: bool) -> None:
    """A protected context for the alias is refused (exit 3) unless --protected-ok."""
    reason = _protected(context)
    if reason and not protected_ok:
        raise SafetyError(
            f"context '{context}' is protected ({reason}): nsightlab would refuse every change there, so the lab pod "
            "could never be made on it",
            hint="Give the context of a staging cluster, or pass --protected-ok to have an alias that only reads.",
        )


def _kubeconfig_or_none(path: Path | None) -> Kubeconfig | None:
    """The kubeconfig, to offer and check contexts; None when there is none to read."""
    try:
        return load_kubeconfig(path)
    except ClusterError:
        if path is not None:
            raise
        return None


def _check_context(name: str, kc: Kubeconfig | None) -> None:
    """A context the kubeconfig does not have is a usage error, with the closest names."""
    if kc is None or name in kc.contexts:
        return
    names = kc.context_names()
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    guess = f"Did you mean {close[0]}? " if close else ""
    raise UsageError(
        f"context '{name}' is not in {kc.path_arg()}", hint=f"{guess}Its contexts: {', '.join(names) or '(none)'}."
    )


def _ask_for_missing(env: Env, values: dict[str, str | None], kc: Kubeconfig | None, *, protected_ok: bool) -> None:
    """Ask on the terminal for each value not given; without one, name the flags (exit 2)."""
    missing = [(key, flag) for key, flag, _ in configure.STARTER_FLAGS if not values[key]]
    if not env.stdin_tty:
        raise UsageError(
            f"nsightlab init needs {', '.join(flag for _, flag in missing)} (there is no terminal to ask on)",
            hint=f"Give {'; '.join(_what_to_give(key, values, kc) for key, _ in missing)}; `nsightlab init --help` "
            "has an example.",
        )
    if not values["context"]:
        values["context"] = _ask_context(env, kc, protected_ok=protected_ok)
    if not values["namespace"]:
        usual = kc.namespace(values["context"] or "") if kc is not None else None
        values["namespace"] = _ask(env, "Namespace for the lab pod", "namespace", default=usual)
    if not values["image"]:
        values["image"] = _ask(
            env,
            "Lab pod image (with nsys, ncu and PyTorch, e.g. registry.example.com/triton-vllm-container:1.0-1)",
            "image",
        )


def _what_to_give(key: str, values: dict[str, str | None], kc: Kubeconfig | None) -> str:
    """What a missing value of `init` is, in words (a hint names no placeholder to paste)."""
    if key == "context":
        names = ", ".join(kc.context_names()) if kc is not None else ""
        return f"--context, one of the contexts in {kc.path_arg()} ({names})" if names and kc else "--context"
    if key == "namespace":
        usual = kc.namespace(values["context"] or "") if kc is not None and values["context"] else None
        return "--namespace, the lab pod's" + (f" (the context's is {usual})" if usual else "")
    return "--image, one with nsys, ncu and PyTorch (the serving sidecar's)"


def _ask(env: Env, question: str, key: str, *, default: str | None = None) -> str:
    """One value from the terminal, asked again until it is acceptable."""
    while True:
        answer = str(typer.prompt(question, default=default, err=True, show_default=default is not None))
        try:
            return configure.check_starter_value(key, answer)
        except UsageError as e:
            env.note(e.line())


def _ask_context(env: Env, kc: Kubeconfig | None, *, protected_ok: bool) -> str:
    """The context for the 'stg' alias: a number from the kubeconfig's list, or a name."""
    names = kc.context_names() if kc is not None else []
    if kc is not None and names:
        env.note(f"Contexts in {kc.path_arg()}:")
        for i, name in enumerate(names, 1):
            guarded = (
                "   (protected: nsightlab never changes anything there)"
                if protection_reason(name, list(DEFAULT_PROTECTED))
                else ""
            )
            env.note(f"  {i:>2}  {name}{guarded}")
    while True:
        answer = _ask(env, "Context of your staging cluster (number or name)", "context")
        if answer.isdigit() and 1 <= int(answer) <= len(names):
            answer = names[int(answer) - 1]
        try:
            _check_context(answer, kc)
            _check_protected(answer, protected_ok)
        except (UsageError, SafetyError) as e:
            env.note(e.line())
            continue
        return answer


@commands.command("config")
def config_cmd(json_out: JsonOpt = False) -> None:
    """Show the effective configuration and where each value came from.

    \b
    Example:
      nsightlab config
      nsightlab --config ./lab.yaml config --json
    """
    env = make_env(json_out)
    view = configure.config_view(load_config(STATE.config_path))
    show(env, view, configview.config_view)
