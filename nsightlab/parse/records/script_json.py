"""A lab script's JSON file, read and validated the one way every record loader reads it:
through `models.loads` (no NaN, infinity or overflowing number), each failure a ParseError
naming the file (and the line, where JSON can tell it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from nsightlab.errors import ParseError, validation_message
from nsightlab.models import NonFiniteError, loads

M = TypeVar("M", bound=BaseModel)


def read_script_json(path: Path) -> Any:
    """The JSON document in `path`, or ParseError naming the file."""
    try:
        return loads(path.read_text(encoding="utf-8"))
    except NonFiniteError as e:
        raise ParseError(e.msg, source=path, line=e.lineno) from None
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg})", source=path, line=e.lineno) from None
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise ParseError(f"cannot read the file: {reason}", source=path) from None


def validate_record(model: type[M], data: Any, *, what: str, source: Path) -> M:
    """`data` as `model`, or ParseError naming the first field that is wrong ("bad `what` at
    runs.0.copies: ...")."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ParseError(f"bad {what} at {where}: {validation_message(err)}", source=source) from None
