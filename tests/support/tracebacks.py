"""Python tracebacks written for tests: the frames given, outermost first, then the exception line."""

from __future__ import annotations


def traceback_text(frames: list[tuple[str, str]], error: str, *, module: str | None = None, prefix: str = "") -> str:
    """``Traceback (most recent call last):``, a frame and a code line for each ``(path, function)``
    (after the main program's ``<module>`` frame when ``module`` names its file), then ``error``; each line
    after ``prefix`` (a process's log prefix, ``[rank0]: ``)."""
    lines = ["Traceback (most recent call last):"]
    if module is not None:
        lines += [f'  File "{module}", line 8, in <module>', "    sys.exit(main())"]
    for path, func in frames:
        lines += [f'  File "{path}", line 42, in {func}', "    x = y()"]
    return "".join(f"{prefix}{x}\n" for x in [*lines, error])
