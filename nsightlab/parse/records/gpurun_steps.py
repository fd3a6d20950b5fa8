"""The steps log `bench/gpu_run.sh` leaves under its OUTDIR: one tab-separated line per
step (step, status, seconds, budget, exit code, detail), `# key: value` header lines and
`# note: ...` lines."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nsightlab.errors import ParseError
from nsightlab.models import Model

#: The first line of the steps log, as the script writes it (the folder's mark).
STEPS_HEADER = "# gpu_run.sh steps"
StepStatus = Literal["ok", "blocked", "failed", "timeout", "skipped"]
_STATUSES: tuple[str, ...] = ("ok", "blocked", "failed", "timeout", "skipped")
_COLUMNS = 6


class RunStep(Model):
    """One line of the steps log."""

    step: str
    status: StepStatus  # blocked: the tool answered "not permitted" (ncu's ERR_NVGPUCTRPERM), a finding
    seconds: float | None
    budget_s: int | None
    exit_code: int | None
    detail: str


class StepsLog(Model):
    header: dict[str, str] = Field(default_factory=dict)
    steps: list[RunStep] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def _int(cell: str) -> int | None:
    return int(cell) if cell.lstrip("-").isdigit() else None


def _float(cell: str) -> float | None:
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def parse_steps_log(text: str, *, source: str) -> StepsLog:
    """The steps log: header keys, one `RunStep` per line, the notes. A line that is not
    the script's is a ParseError naming the file and the line."""
    out = StepsLog()
    lines = text.splitlines()
    if not lines or not lines[0].startswith(STEPS_HEADER):
        raise ParseError(f"not a gpu_run.sh steps log (the first line is not {STEPS_HEADER!r})", source=source, line=1)
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            key, sep, value = body.partition(":")
            if key == "note":
                out.notes.append(value.strip())
            elif sep and key.strip().replace("_", "").isalnum():
                out.header[key.strip()] = value.strip()
            continue
        cells = line.split("\t")
        if len(cells) != _COLUMNS:
            raise ParseError(
                f"expected {_COLUMNS} tab-separated fields, found {len(cells)}", source=source, line=number
            )
        step, status, seconds, budget, code, detail = cells
        if status not in _STATUSES:
            raise ParseError(f"unknown step status {status!r}", source=source, line=number)
        out.steps.append(
            RunStep(
                step=step,
                status=status,  # type: ignore[arg-type]
                seconds=_float(seconds),
                budget_s=_int(budget),
                exit_code=_int(code),
                detail=detail,
            )
        )
    return out
