"""Command lines for hints, built from what the user typed: a hint is pasted as printed,
so it carries the script, the target (`--local`, `--context`, `-n`) and the values given,
never a placeholder."""

from collections.abc import Sequence


def command_line(
    words: Sequence[str],
    *,
    local: bool = False,
    context: str | None = None,
    namespace: str | None = None,
    after_dashes: Sequence[str] = (),
) -> str:
    """`nsightlab WORDS` on the target the user named, then `-- AFTER_DASHES`, shell-quoted."""
    import shlex

    argv = ["nsightlab", *words]
    if local:
        argv.append("--local")
    else:
        argv += ["--context", context] if context else []
        argv += ["-n", namespace] if namespace else []
    if after_dashes:
        argv += ["--", *after_dashes]
    return shlex.join(argv)
