"""Slurm's own outputs, parsed: ``scontrol show job -dd``, ``scontrol listpids``, ``sacct -P``, jobcomp, batch scripts.

Why hand-written and this shape: ``scontrol`` prints ``Key=Value`` pairs, several to a line,
with no quoting — a value may hold spaces (``Comment=kimi k3 serve``, ``Command=/x/run.sh --a b``,
``WorkDir=/scratch/my runs``) and even ``=`` (``Command=/x --port=8000``). Splitting on
whitespace breaks those. What scontrol does guarantee is that such free-text fields end
their line (it prints each of them last, with a line break after it), so a line is cut at
``␠Key=`` only up to the first free-text key, which takes the rest of the line. The one-line
formats (``-o``, the ``jobcomp/filetxt`` file) have no line ends to lean on: there a value
runs until the next *known* key, so a space-and-``=`` inside a value stays in it.

``-dd`` adds one detail line per node group (``Nodes=n[1-2] CPU_IDs=0-7 Mem=0
GRES=gpu:h200:4(IDX:0-3)``): that is the GPU binding per node, kept as a list.

Pure functions only (text in, plain data out); :mod:`k3tui.launch.slurm` runs the commands.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ._common import ParseError

FREE_TEXT_KEYS = frozenset(
    {"JobName", "Command", "WorkDir", "Comment", "AdminComment", "SystemComment", "StdErr", "StdIn", "StdOut", "Power"}
)
"""Keys scontrol prints last on their line: their value is the rest of the line, ``=`` and all."""

JOBCOMP_KEYS = (
    "JobId", "UserId", "GroupId", "Name", "JobState", "Partition", "TimeLimit", "StartTime", "EndTime",
    "NodeList", "NodeCnt", "ProcCnt", "WorkDir", "ReservationName", "Tres", "Account", "QOS", "WcKey",
    "Cluster", "SubmitTime", "EligibleTime", "ArrayJobId", "ArrayTaskId", "DerivedExitCode", "ExitCode",
)  # fmt: skip
"""Keys of a ``jobcomp/filetxt`` line, in the order Slurm writes them."""

SACCT_FIELDS = ("JobID", "JobName", "State", "ExitCode", "Start", "End", "NodeList", "Restarts", "Reason")
"""The ``sacct -P -n -o`` columns :func:`parse_sacct` reads (``Restarts`` and ``Reason`` may be absent)."""

_COMMENT = re.compile(r"""(?:^|\s)#[^'"]*$""")


def shell_words(text: str) -> list[str]:
    """Shell words of one line; a comment starts only at a ``#`` after whitespace (``nvcr.io#nvidia/vllm`` is a word).

    Raises:
        ValueError: unbalanced quotes.
    """
    return shlex.split(_COMMENT.sub("", text))


_KEY_AT = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_/:.]*)=")


# --- scontrol show job -----------------------------------------------------------------------


def parse_kv_line(line: str) -> list[tuple[str, str]]:
    """One ``scontrol`` line → ``[(key, value)]`` (free-text keys take the rest of the line)."""
    out: list[tuple[str, str]] = []
    marks = list(_KEY_AT.finditer(line))
    for i, m in enumerate(marks):
        key = m.group(1)
        end = marks[i + 1].start() if i + 1 < len(marks) else len(line)
        if key in FREE_TEXT_KEYS:
            out.append((key, line[m.end() :].rstrip()))
            return out
        out.append((key, line[m.end() : end].strip()))
    return out


def parse_jobs(text: str) -> list[dict[str, Any]]:
    """Every job of ``scontrol show job -dd`` output (records are separated by blank lines).

    Raises:
        ParseError: no ``JobId=`` record in the text (e.g. an error message instead).
    """
    jobs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.strip()
        if not line:
            cur = None
            continue
        pairs = parse_kv_line(line)
        if not pairs:
            continue
        if pairs[0][0] == "JobId":
            cur = {"details": []}
            jobs.append(cur)
        if cur is None:
            continue
        if pairs[0][0] == "Nodes":  # a -dd detail line: one node group's CPUs, memory and GRES binding
            cur["details"].append(dict(pairs))
            continue
        for k, v in pairs:
            cur.setdefault(k, v)
    if not jobs:
        first = text.strip().splitlines()[0][:200] if text.strip() else "(empty)"
        raise ParseError(f"expected 'JobId=…' records from scontrol show job, got: {first}")
    return jobs


def parse_oneline_job(line: str, keys: tuple[str, ...] = JOBCOMP_KEYS) -> dict[str, str]:
    """A one-line record (``jobcomp/filetxt``, ``scontrol -o``): a value runs until the next known key."""
    names = "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
    marks = list(re.finditer(rf"(?:^|(?<=\s))({names})=", line))
    return {
        m.group(1): line[m.end() : (marks[i + 1].start() if i + 1 < len(marks) else len(line))].strip()
        for i, m in enumerate(marks)
    }


def parse_jobcomp(text: str) -> list[dict[str, str]]:
    """Every record of a ``jobcomp/filetxt`` file (one line per job end, requeued attempts included)."""
    return [rec for line in text.splitlines() if line.startswith("JobId=") and (rec := parse_oneline_job(line))]


def exit_code(value: str | None) -> tuple[int | None, int | None]:
    """``ExitCode=1:0`` → ``(1, 0)`` (exit status, signal); unknown → ``(None, None)``."""
    m = re.fullmatch(r"\s*(\d+):(\d+)\s*", value or "")
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def null(value: str | None) -> str | None:
    """scontrol's ``(null)`` / ``None`` / ``N/A`` / ``Unknown`` → None."""
    v = (value or "").strip()
    return None if v in ("", "(null)", "None", "N/A", "Unknown", "n/a") else v


# --- host lists and GRES --------------------------------------------------------------------


def expand_hostlist(text: str | None) -> list[str]:
    """``n[1-3,7],gpu-[01-02]`` → ``["n1", "n2", "n3", "n7", "gpu-01", "gpu-02"]`` (zero padding kept).

    Raises:
        ParseError: an unbalanced bracket or a range that is not ``A-B`` with A <= B.
    """
    if null(text) is None:
        return []
    out: list[str] = []
    for part in _split_top(text or ""):
        out += _expand_one(part)
    return out


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text.strip():
        depth += (ch == "[") - (ch == "]")
        if depth < 0 or depth > 1:
            raise ParseError(f"bad Slurm host list {text!r}: unbalanced brackets")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise ParseError(f"bad Slurm host list {text!r}: unbalanced brackets")
    return [p for p in [*parts, cur] if p]


def _expand_one(part: str) -> list[str]:
    m = re.fullmatch(r"([^\[\]]*)\[([^\[\]]+)\]([^\[\]]*)", part)
    if m is None:
        if "[" in part or "]" in part:
            raise ParseError(f"bad Slurm host list item {part!r}")
        return [part]
    head, ranges, tail = m.groups()
    out: list[str] = []
    for r in ranges.split(","):
        lo, sep, hi = r.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()) or (sep and int(hi) < int(lo)):
            raise ParseError(f"bad range {r!r} in Slurm host list item {part!r}")
        width = len(lo) if lo.startswith("0") else 0
        for n in range(int(lo), int(hi if sep else lo) + 1):
            out += _expand_one(f"{head}{n:0{width}d}{tail}") if "[" in tail else [f"{head}{n:0{width}d}{tail}"]
    return out


def parse_gres(value: str | None) -> list[dict[str, Any]]:
    """``gpu:h200:2(IDX:0-1),nic:1`` → ``[{"name": "gpu", "type": "h200", "count": 2, "idx": [0, 1]}, …]``."""
    out: list[dict[str, Any]] = []
    for item in re.findall(r"[^,(]+(?:\([^)]*\))?", null(value) or ""):
        m = re.fullmatch(r"\s*(?:gres[:/])?([\w.-]+)(?::([\w.-]+))?(?::(\d+))?(?:\(([^)]*)\))?\s*", item)
        if m is None:
            continue
        name, typ, count, extra = m.groups()
        if count is None and typ is not None and typ.isdigit():
            typ, count = None, typ
        idx_m = re.search(r"IDX:([\d,\-]+|N/A)", extra or "")
        idx = _int_ranges(idx_m.group(1)) if idx_m and idx_m.group(1) != "N/A" else None
        out.append({"name": name, "type": typ, "count": int(count) if count else 1, "idx": idx})
    return out


def _int_ranges(text: str) -> list[int]:
    out: list[int] = []
    for r in text.split(","):
        lo, _, hi = r.partition("-")
        if lo.isdigit():
            out += list(range(int(lo), int(hi or lo) + 1)) if (hi or lo).isdigit() else [int(lo)]
    return out


def gres_binding(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Per node: its GRES as bound (``-dd`` detail lines): ``[{"node", "gres": [...], "cpu_ids", "mem"}]``."""
    rows: list[dict[str, Any]] = []
    for d in job.get("details") or []:
        for node in expand_hostlist(d.get("Nodes")):
            rows.append(
                {"node": node, "gres": parse_gres(d.get("GRES")), "cpu_ids": d.get("CPU_IDs"), "mem": d.get("Mem")}
            )
    return rows


# --- scontrol listpids, sacct ----------------------------------------------------------------


def parse_listpids(text: str) -> list[dict[str, Any]]:
    """``scontrol listpids`` → ``[{"pid", "job", "step", "local_id", "global_id"}]`` (header skipped)."""
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0].isdigit():
            rows.append({
                "pid": int(f[0]), "job": f[1], "step": f[2],
                "local_id": _maybe_int(f[3] if len(f) > 3 else "-"), "global_id": _maybe_int(f[4] if len(f) > 4 else "-"),
            })  # fmt: skip
    return rows


def _maybe_int(v: str) -> int | None:
    return int(v) if v.isdigit() else None


def parse_sacct(text: str, fields: tuple[str, ...] = SACCT_FIELDS) -> list[dict[str, str]]:
    """``sacct -P -n -o F1,F2,…`` (``|``-separated, no header) → one dict per line; the last field keeps any ``|``."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = line.split("|", len(fields) - 1)
        rows.append(dict(zip(fields, [*cells, *[""] * (len(fields) - len(cells))], strict=True)))
    return rows


# --- the batch script ------------------------------------------------------------------------


def sbatch_directives(script: str) -> list[tuple[str, str]]:
    """``#SBATCH`` options as ``(option, value)`` — only those before the first command, as sbatch reads them."""
    out: list[tuple[str, str]] = []
    for line in script.splitlines()[1:] if script.startswith("#!") else script.splitlines():
        s = line.strip()
        if not s:
            continue
        if not s.startswith("#"):
            break
        if not s.startswith("#SBATCH"):
            continue
        try:
            words = shell_words(s[len("#SBATCH") :])
        except ValueError:
            words = s[len("#SBATCH") :].split()
        out += _options(words)
    return out


def _options(words: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and "=" in w:
            k, _, v = w.partition("=")
            out.append((k, v))
        elif w.startswith("-") and i + 1 < len(words) and not words[i + 1].startswith("-"):
            out.append((w, words[i + 1]))
            i += 1
        elif w.startswith("-"):
            out.append((w, ""))
        i += 1
    return out


_CONTAINER_OPTS = ("--container-image", "--container-mounts", "--container-name", "--container-workdir",
                   "--container-env", "--container-mount-home", "--no-container-mount-home")  # fmt: skip
_APPTAINER = re.compile(r"\b(apptainer|singularity)\s+(exec|run|instance\s+start)\b(.*)")


def script_lines(script: str) -> list[str]:
    """Logical lines of a shell script: ``\\``-continued lines joined, comments kept."""
    out, cur = [], ""
    for line in script.replace("\r\n", "\n").split("\n"):
        if line.endswith("\\") and not line.lstrip().startswith("#"):
            cur += line[:-1] + " "
            continue
        out.append(cur + line)
        cur = ""
    if cur:
        out.append(cur)
    return out


def container_flags(script: str, directives: list[tuple[str, str]] | None = None) -> dict[str, Any] | None:
    """The container a job runs in: pyxis ``--container-*`` (``#SBATCH`` or ``srun``), or ``apptainer exec IMAGE``.

    Returns ``{"kind": "pyxis"|"apptainer", "image", "mounts", "options", "digest", "line"}`` or None.
    """
    opts = [
        (k, v) for k, v in (directives if directives is not None else sbatch_directives(script)) if k in _CONTAINER_OPTS
    ]
    line_found = ""
    for line in script_lines(script):
        s = line.strip()
        if s.startswith("#"):
            continue
        if "--container-" in s and re.search(r"\bsrun\b", s):
            try:
                opts += [(k, v) for k, v in _options(shlex.split(s)) if k in _CONTAINER_OPTS]
            except ValueError:
                continue
            line_found = line_found or s
        elif (m := _APPTAINER.search(s)) and not opts:
            return _apptainer(m, s)
    if not opts:
        return None
    got = dict(opts)
    image = got.get("--container-image", "")
    return {
        "kind": "pyxis", "image": image or None, "mounts": [m for m in got.get("--container-mounts", "").split(",") if m],
        "options": {k.lstrip("-"): v for k, v in opts}, "digest": image_digest(image), "line": line_found or None,
    }  # fmt: skip


def _apptainer(m: re.Match[str], line: str) -> dict[str, Any]:
    try:
        words = shlex.split(m.group(3))
    except ValueError:
        words = m.group(3).split()
    mounts: list[str] = []
    i, image = 0, None
    with_value = {
        "-B",
        "--bind",
        "--mount",
        "--env",
        "--env-file",
        "-W",
        "--workdir",
        "--home",
        "-H",
        "--overlay",
        "-o",
    }
    while i < len(words):
        w = words[i]
        if w in ("-B", "--bind", "--mount") and i + 1 < len(words):
            mounts += words[i + 1].split(",")
        if w.startswith("-"):
            i += 2 if w in with_value else 1
            continue
        image = w
        break
    return {
        "kind": m.group(1),
        "image": image,
        "mounts": mounts,
        "options": {},
        "digest": image_digest(image or ""),
        "line": line,
    }


def image_digest(image: str) -> str | None:
    """The ``sha256:…`` digest pinned in an image reference (``repo@sha256:…``, pyxis ``repo#path@sha256:…``)."""
    m = re.search(r"@(sha256:[0-9a-f]{64})\b", image or "")
    return m.group(1) if m else None


def script_exports(script: str) -> dict[str, str]:
    """Variables the script sets for what it runs: ``export K=V`` (and ``K=V`` alone on a line), last one wins."""
    env: dict[str, str] = {}
    for line in script_lines(script):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        try:
            words = shell_words(s)
        except ValueError:
            continue
        if words[:1] == ["export"]:
            words = words[1:]
        elif not (words and all("=" in w for w in words)):
            continue
        for w in words:
            k, eq, v = w.partition("=")
            if eq and k.isidentifier():
                env[k] = v
    return env
