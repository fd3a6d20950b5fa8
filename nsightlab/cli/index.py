"""The program's commands, and the module that defines each: loaded when its command is
run, its help asked for or its name completed, never before.

Each command module imports what its commands need at its top; `nsightlab --help` lists
every command from `COMMANDS` without loading one (a test keeps each line here equal to
its command's own help). The program is a `LazyRoot`: its `commands` load a module the
first time one of that module's commands is looked up by name.
"""

import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import typer.main
from typer.core import TyperGroup

#: Every command, in the order the program's help lists them: the module (of
#: `nsightlab.cli`) whose `commands` define it, and the first paragraph of its help.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("config", "Write a commented starter config.yaml: the 'stg' alias and the tutorial's lab pod."),
    "config": ("config", "Show the effective configuration and where each value came from."),
    "create": ("lab", "Create your GPU lab pod (or reuse it) and wait until it is Ready."),
    "status": ("lab", "The lab pod: phase, node, GPU, age and time left before it deletes itself."),
    "logs": ("lab", "The lab pod's log on stdout, as `kubectl logs` gives it."),
    "events": (
        "lab",
        "The lab pod's Events, as `kubectl describe pod` lists them: type, reason, age, where from, message. What "
        "the scheduler and the kubelet said while it started.",
    ),
    "shell": ("lab", "A shell in the lab pod (bash, else sh), or one command with its output streamed."),
    "copy": ("lab", "Copy files or folders into or out of the lab pod, verified by sha256."),
    "cleanup": ("lab", "Delete your lab pod and give the GPU back; waits until it is gone."),
    "doctor": (
        "lab",
        "Pre-flight checks, each pass/FAIL with the fix, or info: access, every permission the lab needs, GPUs, "
        "and in the pod nvidia-smi, nsys, ncu, PyTorch, /tmp, perf_event_paranoid and RmProfilingAdminOnly.",
    ),
    "profile": (
        "measure",
        "Profile a script under Nsight Systems: kernel table, then TB/s and TFLOPS per range.",
    ),
    "ncu": ("measure", "Nsight Compute on one kernel: DRAM, memory, L2 and SM throughput, with a verdict."),
    "sweep": (
        "measure",
        "Memory-bandwidth sweep: time an in-place scale at many sizes and name the launch, cache and DRAM "
        "regimes, with the DRAM plateau against the GPU's spec.",
    ),
    "analyze": ("offline", "Offline: the same tables as the live commands, from files you already have."),
    "report": (
        "runs",
        "Plots and a report of your runs: a self-contained report.html (images inside, no network needed), "
        "report.md, and the figures as PNG and SVG.",
    ),
    "roofline": (
        "runs",
        "Roofline math for your model: the floor on one decode step, weight bytes / bandwidth, from the DRAM "
        "plateau a sweep measured and from the spec, side by side.",
    ),
    "explore": ("explore", "Read-only tour of a cluster: nodes, GPUs, pods (works on protected contexts too)."),
    "fleet": (
        "fleet",
        "Measure every GPU type (or node) of a cluster at once, as Kubernetes Jobs: sweep, status, collect.",
    ),
    "pack": ("pack", "Per GPU workload: held vs needed, copies per GPU per sharing mode, what binds, a plan."),
    "runs": ("runs", "Stored runs: list them (the default), show one, remove some."),
}


class LazyCommands(MutableMapping[str, Any]):
    """The program's commands by name: the names from `COMMANDS`, each Click command
    built when it is first looked up (with the rest of its module's). `on_load` is given
    each command as it is built."""

    def __init__(self) -> None:
        self._built: dict[str, Any] = {}
        self.on_load: Callable[[Any], None] | None = None

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._load(COMMANDS[name][0])
        return self._built[name]

    def _load(self, module: str) -> None:
        group = typer.main.get_group(importlib.import_module(f"nsightlab.cli.{module}").commands)
        for name, command in group.commands.items():
            if self.on_load is not None:
                self.on_load(command)
            self._built.setdefault(name, command)

    def loaded(self, name: str) -> Any | None:
        """The command if it was built already, else None."""
        return self._built.get(name)

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("the program's commands are fixed")

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self._built if name not in COMMANDS)

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self._built))


class LazyRoot(TyperGroup):
    """The program's group: its commands in a `LazyCommands`; its help lists them
    without building any."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands()

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """As Click lists a group's commands, each by the first sentence of its help,
        from `COMMANDS` for those not built yet."""
        lazy = self.commands
        assert isinstance(lazy, LazyCommands)
        rows = [
            (name, lazy.loaded(name) or typer.core.TyperCommand(name, help=help_))
            for name, (_, help_) in COMMANDS.items()
        ]
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])
