"""Checks that keep docs/ and the code together, each a function of a page's text (so a
test can feed it a page that drifted and see it caught):

- `json_block_problems`: every ```json block names the model it shows (an HTML comment
  right before it, `<!-- json: nsightlab.module.ModelName -->`; several models, one per
  document of the block, separated by commas; `+ key` for a key the command adds to the
  model's own by hand) and shows exactly that model's keys, recursively.
- `coverage_problems`: every command of the CLI is named in its page, and every option it
  takes (hidden ones aside) is there.
- `command_line_problems`: every `nsightlab ...` line of a code block parses against the
  real CLI; a placeholder in capitals only where the page says what it stands for.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from docshape import NotationError, Shape, model_at, problems, read_documents, shape_of
from hintcheck import parse_problem

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*json:\s*(?P<models>[^>]*?)\s*-->$")


def code_blocks(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line number of the opening fence, language, lines) of each fenced block."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, lang, body = i + 1, m.group(1), []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        yield start, lang, body
        i += 1


def prose(text: str) -> str:
    """The page without its fenced blocks."""
    out, inside = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            out.append(line)
    return "\n".join(out)


# ---------------------------------------------------------------------------- JSON blocks


def json_block_problems(text: str, page: str) -> list[str]:
    """What the page's ```json blocks get wrong about the models they name."""
    lines = text.splitlines()
    out: list[str] = []
    for start, lang, body in code_blocks(text):
        if lang != "json":
            continue
        where = f"{page}:{start}"
        before = next((lines[j].strip() for j in range(start - 2, -1, -1) if lines[j].strip()), "")
        marker = _MARKER.match(before)
        if marker is None:
            out.append(
                f"{where}: a json block without its model: put `<!-- json: nsightlab.module.ModelName -->` right "
                "before it (or link to json.md instead of repeating it)"
            )
            continue
        try:
            docs = read_documents("\n".join(body))
        except NotationError as e:
            out.append(f"{where}: {e}")
            continue
        named = [m.strip() for m in marker.group("models").split(",")]
        if len(named) != len(docs):
            out.append(f"{where}: the marker names {len(named)} model(s), the block holds {len(docs)} document(s)")
            continue
        for doc, spec in zip(docs, named, strict=True):
            out += _doc_problems(doc, spec, where)
    return out


def _doc_problems(doc: Any, spec: str, where: str) -> list[str]:
    dotted, *extra = [part.strip() for part in spec.split("+")]
    try:
        shape = shape_of(model_at(dotted))
    except (ImportError, AttributeError) as e:
        return [f"{where}: the marker's model {dotted} does not import ({e}); docs/json.md's table says where each is"]
    if extra:  # keys the command adds by hand: part of the document, not of the model
        shape = replace(shape, fields=(*shape.fields, *((k, Shape("any")) for k in extra)))
    return [f"{where}: {p}" for p in problems(doc, shape, dotted.rsplit(".", 1)[-1])]


# ---------------------------------------------------------------------------- commands and options


def code_texts(text: str) -> list[str]:
    """Every inline code span and every line of a fenced block."""
    spans = re.findall(r"`([^`\n]+)`", prose(text))
    block_lines = [line for _, _, body in code_blocks(text) for line in body]
    return spans + block_lines


def mentions_command(text: str, path: tuple[str, ...]) -> bool:
    """The page names the command in code: `fleet collect ...`, `nsightlab fleet collect`."""
    for code in code_texts(text):
        words = code.replace("$ ", "", 1).split()
        if words[:1] == ["nsightlab"]:
            words = words[1:]
        if tuple(words[: len(path)]) == path:
            return True
    return False


def mentions_option(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def coverage_problems(pages: dict[str, str], where: dict[tuple[str, ...], str], commands: Iterable[Any]) -> list[str]:
    """Each command named in its page (`where` maps a command's path to its page), and
    each long option it takes (hidden ones and --help aside; the program's --help counts)
    written there."""
    out: list[str] = []
    for cmd in commands:
        page = where.get(cmd.path)
        if page is None:
            out.append(f"{cmd.name}: no page in the test's map of commands to pages")
            continue
        text = pages[page]
        if cmd.path and not mentions_command(text, cmd.path):
            out.append(f"{cmd.name}: not named in {page} (as `{' '.join(cmd.path)}` in code)")
        for opt in cmd.options():
            if opt.hidden:
                continue
            for name in [*opt.opts, *opt.secondary_opts]:
                if not name.startswith("--") or (name == "--help" and cmd.path):
                    continue
                if not mentions_option(text, name):
                    out.append(f"{cmd.name} {name}: not in {page}")
    return out


# ---------------------------------------------------------------------------- command lines


_CAPS = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]+(?![A-Za-z0-9_])")
_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "(", ")"}


def command_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, command) of each `nsightlab ...` or `$ nsightlab ...` line of a code
    block, continuation lines joined; the words after it on the line run too (`&& nsightlab
    events`), so the line is given whole."""
    for start, lang, body in code_blocks(text):
        if lang in ("json", "yaml"):
            continue
        i = 0
        while i < len(body):
            line, number = body[i].strip(), start + 1 + i
            while line.endswith("\\") and i + 1 < len(body):
                i += 1
                line = line[:-1] + " " + body[i].strip()
            if _is_command(line):
                yield number, _command_part(line)
            i += 1
    # indented code blocks (four spaces), where a page has them
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("    ") and _is_command(line.strip()) and _outside_fences(text, number):
            yield number, _command_part(line.strip())


_ENV = re.compile(r"^(?:\$ )?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*")  # a prompt, then VAR=value words


def _command_part(line: str) -> str:
    prefix = _ENV.match(line)
    return line[prefix.end() :] if prefix else line


def _is_command(line: str) -> bool:
    rest = _command_part(line)
    return rest.startswith("nsightlab ") or rest == "nsightlab"


def _outside_fences(text: str, number: int) -> bool:
    return not any(start < number <= start + len(body) for start, _, body in code_blocks(text))


def _commands_of(line: str) -> list[list[str]]:
    """The `nsightlab` commands of a shell line, as words (comments dropped)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    out: list[list[str]] = []
    current: list[str] = []
    for word in lexer:
        if word in _OPERATORS:
            out.append(current)
            current = []
        else:
            current.append(word)
    out.append(current)
    return [words for words in out if words[:1] == ["nsightlab"]]


def command_line_problems(text: str, page: str, placeholders: dict[str, str]) -> list[str]:
    """Each command line of the page parses as the CLI parses it. A placeholder in capitals
    (CTX, RUN) is replaced by the example `placeholders` gives for this page; any other is
    a problem."""
    out: list[str] = []
    for number, line in command_lines(text):
        where = f"{page}:{number}"
        try:
            commands = _commands_of(line)
        except ValueError as e:
            out.append(f"{where}: not a shell line ({e}): {line}")
            continue
        angle = re.search(r"<[\w.-]+>", line.split(" #", 1)[0])  # <id>: a shell would read a redirection
        if angle:
            out.append(f"{where}: placeholder {angle.group(0)!r} the page does not explain: {line}")
            continue
        for words in commands:
            argv = list(words[1:])
            after_dashes = argv.index("--") if "--" in argv else len(argv)
            unknown = [cap for w in argv[:after_dashes] for cap in _CAPS.findall(w) if cap not in placeholders] + [
                w for w in argv[:after_dashes] if "..." in w or re.search(r"<[^>]*>", w)
            ]
            if unknown:
                out.append(
                    f"{where}: placeholder {unknown[0]!r} the page does not explain (or the test's list lacks): {line}"
                )
                continue
            filled = [
                _CAPS.sub(lambda m: placeholders[m.group(0)], w) if i < after_dashes else w for i, w in enumerate(argv)
            ]
            problem = parse_problem(filled)
            if problem is not None:
                out.append(f"{where}: {problem}: {line}")
    return out


def explained(text: str, placeholder: str) -> bool:
    """The page says what `placeholder` stands for: it appears in its prose (outside the
    code blocks)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(placeholder)}(?![A-Za-z0-9_])", prose(text)) is not None


# ---------------------------------------------------------------------------- the README


README_MAX_LINES = 250


def readme_problems(text: str, pages: Iterable[str]) -> list[str]:
    """The README fits a screen or two, and its table links every page of docs/."""
    out = []
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines >= README_MAX_LINES:
        out.append(f"README.md has {lines} lines; it must stay under {README_MAX_LINES} (the manual is in docs/)")
    rows = [line for line in text.splitlines() if line.startswith("|")]
    for page in sorted(pages):
        link = f"](docs/{page})"
        if not any(link in row for row in rows):
            out.append(f"docs/{page} is not linked from README.md's table of the manual")
    return out
