"""The terminal view of each result type, in one table: what a command, `analyze` and
`runs show` draw for the typed result they hold.

A result type without a view here is a bug (a `TypeError`), never a guess."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.decode_models import DecodeResult, TraceResult
from nsightlab.analysis.fleet_models import FleetResult
from nsightlab.analysis.gpurun_result import GpuRunResult
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.sweep_impls import SweepImpls
from nsightlab.analysis.sweep_result import SweepCompare, SweepResult
from nsightlab.analysis.tokenizer_result import TokenizerResult
from nsightlab.present import decodeview, fleetview, profileview, sweepview
from nsightlab.present.gpurunview import draw_gpu_run
from nsightlab.present.packview import draw_colocate, draw_tokenizer

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nsightlab.present.console import Env

View = Callable[["Env", Any], None]

#: Each result type's view, by the exact type.
RESULT_VIEWS: dict[type[BaseModel], View] = {
    ProfileResult: profileview.profile,
    NcuResult: profileview.ncu,
    SweepResult: sweepview.sweep,
    SweepCompare: sweepview.sweep_compare,
    SweepImpls: sweepview.sweep_impls,
    DecodeResult: decodeview.decode,
    TraceResult: decodeview.trace_result,
    FleetResult: fleetview.fleet,
    GpuRunResult: draw_gpu_run,
    ColocateResult: draw_colocate,
    TokenizerResult: draw_tokenizer,
}


def draw_result(env: Env, result: BaseModel) -> None:
    """`result` drawn by the view of its type."""
    view = RESULT_VIEWS.get(type(result))
    if view is None:
        raise TypeError(f"no terminal view for a {type(result).__name__}")
    view(env, result)
