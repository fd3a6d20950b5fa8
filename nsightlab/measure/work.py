"""Ctrl-C during lab work (profile, ncu, sweep): a run is stored whole or not at all, and
one line says so, with what stays on the target."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import TYPE_CHECKING

from nsightlab.errors import OnInterrupt
from nsightlab.runs import store

if TYPE_CHECKING:
    from nsightlab.measure.targets import Target
    from nsightlab.runs.store import Run


class LabWork(OnInterrupt):
    """While inside, a run folder begun with `new_run` is stored whole or not at all: an
    error or Ctrl-C removes it unless it is complete (a failed ncu, nsys or script leaves
    no half run for `nsightlab runs` to list). Ctrl-C ends the command with `interrupted:
    the <kind> was stopped; no run was stored`, naming the work folder left on the target."""

    def __init__(self, kind: str, target: Target) -> None:
        super().__init__(f"the {kind} was stopped; no run was stored")
        self.kind = kind
        self.target = target
        self.run: Run | None = None

    def new_run(self, kind: str, name: str, *, now: datetime | None = None) -> tuple[Run, str]:
        """`store.new_run`, remembered so that an interrupted run is not left half-made."""
        run, run_id = store.new_run(kind, name, now=now)
        self.run = run
        return run, run_id

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        stored = self.run is not None and self.run.has_result()
        if kind is not None and self.run is not None and not stored:
            with contextlib.suppress(OSError):
                store.remove(self.run)
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            left = self.target.made_workdir()
            where = f"; its work folder {left} stays on {self.target.label}" if left else ""
            self.state = (
                f"the {self.kind} was stopped after its run was stored"
                if stored
                else f"the {self.kind} was stopped; no run was stored{where}"
            )
        super().__exit__(kind, exc, tb)
