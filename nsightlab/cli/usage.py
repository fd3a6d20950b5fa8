"""Mistakes on the command line, said in nsightlab's own words.

Typer parses the options (with Click's machinery and pydantic's coercion) and raises
Click's usage errors, whose text ("Invalid value for '--iters': Input should be a valid
integer ...") names neither what was typed nor what to do. `usage_line` turns one of them
into the single line every nsightlab error is: what was wrong, and the command to read.
"""

import difflib
import re
from collections.abc import Sequence
from typing import Any

from nsightlab.errors import plain_value_message

# Click's words for an option used wrongly, and ours.
_CLICK: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^Option '([^']+)' requires an argument\.?$"), r"\1 needs a value"),
    (re.compile(r"^Option '([^']+)' requires (\d+) arguments\.?$"), r"\1 needs \2 values"),
    (re.compile(r"^Option '([^']+)' does not take a value\.?$"), r"\1 takes no value"),
    (re.compile(r"^Got unexpected extra argument(?:s|\(s\))? \((.*)\)\.?$"), r"unexpected extra argument(s): \1"),
    (re.compile(r"^(\S+) is not in the range (.+)\.?$"), r"\1 is out of range (\2)"),
)
_VALUE_WORDS = ("is not", "must be", "should be")


def _given(args: Sequence[str], opts: Sequence[str]) -> str | None:
    """What was typed for an option (`--iters x` or `--iters=x`), if it can be told."""
    for i, arg in enumerate(args):
        if arg == "--":
            return None
        for opt in opts:
            if arg == opt and i + 1 < len(args):
                return args[i + 1]
            if opt.startswith("--") and arg.startswith(opt + "="):
                return arg[len(opt) + 1 :]
    return None


def _param_name(param: Any) -> str:
    opts = [o for o in getattr(param, "opts", []) or [] if o.startswith("--")] or list(getattr(param, "opts", []) or [])
    if getattr(param, "param_type_name", "") == "argument" or not opts:
        return str(getattr(param, "name", "") or "?").upper()
    return str(opts[0])


def _command_path(e: Any, args: Sequence[str] = (), root: Any = None) -> str:
    """The command the mistake was made in: from Click's context, else found in `args`
    (an option's missing value is noticed before the context is attached)."""
    ctx = getattr(e, "ctx", None)
    path = str(getattr(ctx, "command_path", "") or "")
    if path:
        return path
    words, group = ["nsightlab"], root
    for arg in args:
        if arg == "--" or group is None:
            break
        sub = (getattr(group, "commands", None) or {}).get(arg)
        if sub is not None:
            words.append(arg)
            group = sub
    return " ".join(words)


def _bad_parameter(e: Any, args: Sequence[str]) -> str:
    param = getattr(e, "param", None)
    what = _plain_click(plain_value_message(str(getattr(e, "message", "") or "")))
    if param is None:
        return f"bad value: {what}"
    name = _param_name(param)
    given = _given(args, list(getattr(param, "opts", []) or []))
    if given is not None and what.startswith(_VALUE_WORDS):
        return f"{name} {given!r} {what}"
    return f"bad value for {name}: {what}"


def _plain_click(message: str) -> str:
    text = message.strip()
    for pattern, ours in _CLICK:
        if pattern.search(text):
            return pattern.sub(ours, text, count=1)
    return text.rstrip(".")


def _no_such_command(e: Any, message: str) -> str | None:
    m = re.match(r"^No such command '([^']*)'", message)
    if m is None:
        return None
    name = m.group(1)
    ctx = getattr(e, "ctx", None)
    group = getattr(ctx, "command", None)
    known = sorted(getattr(group, "commands", {}) or {})
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    text = f"{_command_path(e)} has no command '{name}'"
    return text + (f" (did you mean {close[0]}?)" if close else "")


def usage_line(e: Any, args: Sequence[str], root: Any = None) -> str:
    """The one line (without the "error: " prefix) for a Click usage error `e`; `root` is
    the Click group of the whole program, to name the command when Click did not."""
    kinds = {c.__name__ for c in type(e).__mro__}
    message = str(getattr(e, "message", "") or str(e))
    if "NoSuchOption" in kinds:
        opt = getattr(e, "option_name", "") or message.rsplit(" ", 1)[-1]
        text = f"{_command_path(e)} has no option {opt}"
        close = difflib.get_close_matches(opt, list(getattr(e, "possibilities", None) or []), n=1, cutoff=0.0)
        if close:
            text += f" (did you mean {close[0]}?)"
    elif "MissingParameter" in kinds:
        param = getattr(e, "param", None)
        kind_word = getattr(param, "param_type_name", None) or getattr(e, "param_type", None) or "value"
        text = f"missing {kind_word} {_param_name(param)}" if param is not None else "a required value is missing"
    elif "BadParameter" in kinds:
        text = _bad_parameter(e, args)
    else:
        text = _no_such_command(e, message) or _plain_click(plain_value_message(message))
    return f"{text}; see `{_command_path(e, args, root)} --help`"
