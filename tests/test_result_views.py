"""The table of result views (`nsightlab.present.resultviews`): each entry names a result
model and a view that exist, matched by the exact type, and a type without a view is an
error, never another type's view."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from nsightlab.present.resultviews import RESULT_VIEWS, draw_result, load, type_key, view_of

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("key", sorted(RESULT_VIEWS))
def test_each_entry_names_a_result_model_and_its_view(key: str) -> None:
    kind = load(key)
    assert isinstance(kind, type) and issubclass(kind, BaseModel), key
    assert type_key(kind) == key  # the key is where the class lives, not an alias of it
    view = view_of(kind)
    assert callable(view), RESULT_VIEWS[key]
    assert view is load(RESULT_VIEWS[key])


def test_a_subclass_or_an_unknown_model_has_no_view() -> None:
    trace_result = load("nsightlab.analysis.decode_models:TraceResult")

    class Other(trace_result):  # type: ignore[misc, valid-type]
        pass

    class Unknown(BaseModel):
        pass

    assert view_of(trace_result) is not None
    assert view_of(Other) is None
    with pytest.raises(TypeError, match="no terminal view for a Unknown"):
        draw_result(None, Unknown())  # type: ignore[arg-type]


def test_the_table_loads_no_view_until_one_is_drawn() -> None:
    code = (
        "import sys\n"
        "import nsightlab.present.resultviews\n"
        "print(sorted(m for m in sys.modules if m.startswith('nsightlab.present.') and m.endswith('view')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
