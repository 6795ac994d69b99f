"""A batch script as the ladder's launch definition: find its server line, rewrite one variable, diff it.

Why edit the frozen script rather than write a new one: the script *is* the deployment —
its ``#SBATCH`` resources, module loads, container flags (``srun --container-image=…``),
``cd``s and exports are what the failure happened under. A ladder run must be that script
with exactly one variable changed, so this module touches only two kinds of line:

- the **server line** (the first command that runs ``vllm serve`` or ``python -m
  vllm.entrypoints…``, ``\\``-continuations joined): what comes before the server program
  (``srun --container-image=… ``, ``exec``) and after its arguments (``2>&1 | tee …``) is
  kept (re-quoted only when the argv changes; ``$VAR`` words stay expandable); only the
  server's argv is rebuilt from the run's :class:`~k3tui.ladder.config.RunConfig`;
- **exports**: a changed variable's ``export K=…`` line is rewritten in place, a new one is
  added just above the server line, a removed one becomes ``unset K`` there.

:func:`script_diff` is what the operator sees before ``sbatch`` (and what ``k3tui diff``
prints for two frozen jobs): a unified diff, line by line.
"""

from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass

from ..errors import UsageError
from ..scene.parsers.slurm import script_exports, shell_words

_SHELL_OPS = frozenset({"|", "||", "&&", ";", "&", "|&"})
_REDIRECT = re.compile(r"^\d*(?:>>?|<)(?:&\d+)?$|^\d*>&\d+$|^&>>?$")


@dataclass
class ServerLine:
    """Where the server runs in a script: physical lines ``first..last``, and the words around its argv."""

    first: int
    last: int
    indent: str
    prefix: list[str]
    argv: list[str]
    suffix: list[str]


def find_server_line(script: str) -> ServerLine:
    """The server line of ``script``.

    Raises:
        UsageError: no line of the script runs ``vllm serve`` / ``vllm.entrypoints``.
    """
    lines = script.split("\n")
    i = 0
    while i < len(lines):
        first, text = i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        found = _server_words(text)
        if found is not None and not text.lstrip().startswith("#"):
            prefix, argv, suffix = found
            indent = text[: len(text) - len(text.lstrip())]
            return ServerLine(first, i, indent, prefix, argv, suffix)
        i += 1
    raise UsageError("the job's batch script runs no 'vllm serve' (or python -m vllm.entrypoints…) line to change")


def _server_words(text: str) -> tuple[list[str], list[str], list[str]] | None:
    if "vllm" not in text:
        return None
    try:
        words = shell_words(text)
    except ValueError:
        return None
    for i, w in enumerate(words):
        nxt = words[i + 1 : i + 3]
        if (
            (w == "vllm" or w.endswith("/vllm"))
            and nxt[:1] == ["serve"]
            or (
                re.search(r"python[\d.]*$", w)
                and nxt[:1] == ["-m"]
                and nxt[1:2]
                and nxt[1].startswith("vllm.entrypoints")
            )
        ):
            end = next(
                (j for j in range(i, len(words)) if words[j] in _SHELL_OPS or _REDIRECT.match(words[j])), len(words)
            )
            return words[:i], words[i:end], words[end:]
    return None


def server_argv_of(script: str) -> list[str]:
    """The server's argv as the script runs it (``/opt/venv/bin/vllm serve M --x …``)."""
    return find_server_line(script).argv


_SCALAR_OPTS = {
    "max_model_len": ("--max-model-len",),
    "tensor_parallel_size": ("--tensor-parallel-size", "-tp"),
    "gpu_memory_utilization": ("--gpu-memory-utilization",),
}


def edit_in_place(script: str, changes: list[dict[str, object]]) -> str | None:
    """Apply option changes (``ladder.config.diff`` rows) to the server line's own text; None when one
    cannot be applied there (the caller rebuilds the line).

    A changed value is replaced where it stands (``--max-model-len 4096`` → ``2048``), a flipped
    switch is renamed (``--enable-x`` ↔ ``--no-enable-x``), a removed option is cut out, a new one is
    appended to the argv's last line — so the diff the operator sees is one line, continuation
    lines and all.
    """
    line = find_server_line(script)
    lines = script.split("\n")
    block = "\n".join(lines[line.first : line.last + 1])
    for ch in changes:
        key, new = str(ch["key"]), ch["new"]
        names = _SCALAR_OPTS.get(key) or ((f"--{key[5:]}",) if key.startswith("flag:") else None)
        if names is None:
            return None
        got = _edit_option(block, names, new, _append_at(block, line))
        if got is None:
            return None
        block = got
    return "\n".join([*lines[: line.first], block, *lines[line.last + 1 :]])


def _append_at(block: str, line: ServerLine) -> int | None:
    """Where a new option goes in the server block: before what follows the argv (``2>&1 | tee …``), else at its end."""
    end = len(block.rstrip())
    if block[:end].endswith("\\"):
        return None
    if not line.suffix:
        return end
    start = block.find(line.argv[0])
    pos = block.find(" " + line.suffix[0], start + len(line.argv[0])) if start >= 0 else -1
    return pos if pos >= 0 else None


def _edit_option(block: str, names: tuple[str, ...], new: object, at: int | None) -> str | None:
    alt = "|".join(re.escape(n) for n in names)
    neg = "|".join(re.escape("--no-" + n[2:]) for n in names if n.startswith("--"))
    value = r"(?:'[^']*'|\"[^\"]*\"|[^\s\\'\"]+)"
    with_value = re.compile(rf"(?<!\S)({alt})(=|[ \t]+)(?!-)({value})(?=\s|$)")
    switch = re.compile(rf"(?<!\S)({alt}|{neg})(?=\s|$)")
    m = with_value.search(block)
    if m is not None and not isinstance(new, bool):
        if new is None:
            return block[: m.start()].rstrip(" \t") + block[m.end() :]
        return block[: m.start(3)] + shlex.quote(_fmt(new)) + block[m.end(3) :]
    m = switch.search(block)
    if m is not None and (isinstance(new, bool) or new is None):
        if new is None:
            return block[: m.start()].rstrip(" \t") + block[m.end() :]
        name = names[0] if new else "--no-" + names[0][2:]
        return block[: m.start()] + name + block[m.end() :]
    if m is None and new is not None and at is not None:
        opt = (
            names[0]
            if new is True
            else "--no-" + names[0][2:]
            if new is False
            else f"{names[0]} {shlex.quote(_fmt(new))}"
        )
        return block[:at] + " " + opt + block[at:]
    return None


def _fmt(v: object) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def rewrite(script: str, argv: list[str], env: dict[str, str | None]) -> str:
    """``script`` with the server's argv replaced and ``env`` applied (``None`` = unset).

    Variables whose value the script already exports as given are left alone, so an
    unchanged config rewrites the script to itself.
    """
    line = find_server_line(script)
    lines = script.split("\n")
    exported = script_exports(script)
    above: list[str] = []
    for k, v in env.items():
        if (exported.get(k) == v) or (v is None and k not in exported):
            continue
        at = _export_line(lines[: line.first], k)
        new = f"unset {k}" if v is None else f"export {k}={shlex.quote(v)}"
        if at is not None:
            lines[at] = _indent_of(lines[at]) + new
        else:
            above.append(line.indent + new)
    if argv == line.argv:
        server = lines[line.first : line.last + 1]  # unchanged: kept byte for byte
    else:
        server = [line.indent + " ".join(_quote(w) for w in [*line.prefix, *argv, *line.suffix])]
    return "\n".join([*lines[: line.first], *above, *server, *lines[line.last + 1 :]])


def _quote(word: str) -> str:
    """Shell-quote a word again; one that expands a variable (``$MODEL``) stays expandable."""
    if word in _SHELL_OPS or _REDIRECT.match(word):
        return word
    if "$" in word and '"' not in word and "`" not in word:
        return word if re.fullmatch(r"[\w$@%+=:,./{}-]+", word) else f'"{word}"'
    return shlex.quote(word)


def _export_line(lines: list[str], key: str) -> int | None:
    pat = re.compile(rf"^\s*(?:export\s+)?{re.escape(key)}=")
    hits = [
        i
        for i, s in enumerate(lines)
        if pat.match(s) and " " not in s.strip().split("=", 1)[0].replace("export ", "", 1)
    ]
    return hits[-1] if hits else None


def _indent_of(s: str) -> str:
    return s[: len(s) - len(s.lstrip())]


def script_diff(old: str, new: str, old_name: str = "frozen", new_name: str = "run") -> list[str]:
    """Unified diff of two scripts, line by line (no trailing newlines)."""
    return [
        d.rstrip("\n")
        for d in difflib.unified_diff(old.split("\n"), new.split("\n"), old_name, new_name, n=1, lineterm="")
    ]
