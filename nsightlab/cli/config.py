"""`init` and `config`: the starter config file and the effective configuration."""

from typing import Annotated, Optional

import typer

from nsightlab.cli.common import STATE, JsonOpt, app, make_env, show


@app.command()
def init(
    context: Annotated[Optional[str], typer.Option("--context", help="kubeconfig context for the 'stg' alias.")] = None,  # noqa: UP045
    namespace: Annotated[Optional[str], typer.Option("--namespace", help="namespace for the lab pod.")] = None,  # noqa: UP045
    image: Annotated[Optional[str], typer.Option("--image", help="lab pod image (with nsys, ncu, PyTorch).")] = None,  # noqa: UP045
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing config file.")] = False,
) -> None:
    """Write a commented starter config.yaml with the tutorial's lab pod settings.

    \b
    Example:
      nsightlab init --context stg-online-use1 --namespace ml-lab \\
          --image registry.example.com/triton-vllm-container:1.0-1
    """
    from nsightlab import configure

    env = make_env()
    path = configure.write_starter_config(STATE.config_path, context=context, namespace=namespace, image=image, force=force)
    env.note(f"wrote {path}")
    env.write(f"{path}\n")

@app.command("config")
def config_cmd(json_out: JsonOpt = False) -> None:
    """Show the effective configuration and where each value came from.

    \b
    Example:
      nsightlab config
      nsightlab --config ./lab.yaml config --json
    """
    from nsightlab import configure
    from nsightlab.config import load_config
    from nsightlab.present import render

    env = make_env(json_out)
    view = configure.config_view(load_config(STATE.config_path))
    show(env, view, render.config_view)
