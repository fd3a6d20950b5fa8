"""Shell completion, as Typer offers it: `--show-completion SHELL` prints the script,
`--install-completion SHELL` installs it, and the script asks the program for the words
through Click's protocol (`_NSIGHTLAB_COMPLETE=complete_bash` with COMP_WORDS and
COMP_CWORD set: the candidates, one a line).

`typer.completion` (which Typer loads with itself) is where Typer's own options find these
functions (since 0.12), though it does not list them as exports: hence the `type: ignore`s.
"""

import os
import sys
from typing import Any

import typer
from typer.completion import completion_init, get_completion_script, shell_complete  # type: ignore[attr-defined]
from typer.completion import install as typer_install  # type: ignore[attr-defined]

PROG = "nsightlab"
VAR = "_NSIGHTLAB_COMPLETE"
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def _shell(value: str) -> str:
    shell = value.strip().lower()
    if shell not in SHELLS:
        raise typer.BadParameter(f"is not a shell nsightlab completes ({', '.join(SHELLS)})")
    return shell


def show(value: str | None) -> None:
    """--show-completion SHELL: the script on stdout, to source or keep."""
    if value is None:
        return
    typer.echo(get_completion_script(prog_name=PROG, complete_var=VAR, shell=_shell(value)))
    raise typer.Exit()


def install(value: str | None) -> None:
    """--install-completion SHELL: the script where SHELL reads it (Typer's places: for bash
    ~/.bash_completions/nsightlab.sh, sourced from ~/.bashrc)."""
    if value is None:
        return
    shell, path = typer_install(shell=_shell(value), prog_name=PROG, complete_var=VAR)
    typer.echo(f"{shell} completion installed in {path}; it takes effect in a new shell.", err=True)
    raise typer.Exit()


def complete_if_asked(command: Any) -> None:
    """Answer a completion request (the shell script sets VAR) and exit; else return."""
    instruction = os.environ.get(VAR)
    if not instruction:
        return
    completion_init()  # Typer's classes for bash, zsh, fish and PowerShell
    sys.exit(shell_complete(command, {}, PROG, VAR, instruction))
