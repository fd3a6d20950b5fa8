"""The terminal view of each result type, in one table: what a command, `analyze` and
`runs show` draw for the typed result they hold.

The table names each result type and its view by module and name, and a view's module
is imported when a result of its type is drawn: `analyze` of one trace loads the trace's
view, not the report, the run store and the nine other views (`tests/test_analyze_imports.py`).
`tests/test_result_views.py` checks that every entry names a result model and a view that
exist. A result type without a view here is a bug (a `TypeError`), never a guess."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nsightlab.present.console import Env

View = Callable[["Env", Any], None]

#: Each result type (`module:class`, matched exactly) and its view (`module:function`).
RESULT_VIEWS: dict[str, str] = {
    "nsightlab.analysis.profile_models:ProfileResult": "nsightlab.present.profileview:profile",
    "nsightlab.analysis.ncu_result:NcuResult": "nsightlab.present.profileview:ncu",
    "nsightlab.analysis.sweep_result:SweepResult": "nsightlab.present.sweepview:sweep",
    "nsightlab.analysis.sweep_result:SweepCompare": "nsightlab.present.sweepview:sweep_compare",
    "nsightlab.analysis.sweep_impls:SweepImpls": "nsightlab.present.sweepview:sweep_impls",
    "nsightlab.analysis.decode_models:DecodeResult": "nsightlab.present.decodeview:decode",
    "nsightlab.analysis.decode_models:TraceResult": "nsightlab.present.decodeview:trace_result",
    "nsightlab.analysis.fleet_models:FleetResult": "nsightlab.present.fleetview:fleet",
    "nsightlab.analysis.gpurun_result:GpuRunResult": "nsightlab.present.gpurunview:draw_gpu_run",
    "nsightlab.analysis.colocate_models:ColocateResult": "nsightlab.present.packview:draw_colocate",
    "nsightlab.analysis.tokenizer_result:TokenizerResult": "nsightlab.present.packview:draw_tokenizer",
}


def type_key(kind: type) -> str:
    """`module:class` of a type, as `RESULT_VIEWS` names it."""
    return f"{kind.__module__}:{kind.__qualname__}"


def load(target: str) -> Any:
    """The object `module:name` names (its module imported on first use)."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def view_of(kind: type) -> View | None:
    """The view of a result type, None where it has none."""
    target = RESULT_VIEWS.get(type_key(kind))
    return None if target is None else load(target)


def draw_result(env: Env, result: BaseModel) -> None:
    """`result` drawn by the view of its type."""
    view = view_of(type(result))
    if view is None:
        raise TypeError(f"no terminal view for a {type(result).__name__}")
    view(env, result)
