"""A sampled mutation run: would the tests notice if this module were wrong? (issue 22)

Why: a green suite says the code passes its tests, not that the tests would fail on a wrong
answer. This script makes small faults (mutants) in one module, runs the tests that cover it
against each, and counts which mutants no test kills. Every mutant is applied to a COPY of
the tree (``git archive HEAD`` into a temporary folder), never to the working tree other
people edit; the copy's tests run with a per-mutant timeout.

Operators (each a small edit of one AST node, spliced into the source so the rest of the
file is byte-identical): comparison swaps (``==``/``!=``, ``<``/``>=`` …, ``in``/``not in``,
``is``/``is not``), boolean swaps (``and``/``or``, ``not x`` → ``x``, ``True``/``False``),
integer constants moved by one, returns emptied (``return X`` → ``return None``), simple
statements removed (→ ``pass``), strings/needles replaced.

Usage (from the repository root)::

    .venv/bin/python bench/mutation.py k3tui/textsafe.py tests/test_hostile_display.py \\
        --sample 40 --seed 7 --timeout 120

Equivalent mutants (no test can kill them: the behaviour is the same) are listed in
``bench/README.md`` as `` `mut:PATH:LINE:COL:OPERATOR` — reason`` and excluded from the
kill rate; the script prints survivors in that form so a reviewer can classify them.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_CMP_SWAP: dict[type, type] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_SIMPLE_STMTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Raise, ast.Delete, ast.Assert)
_NEEDLE = "\x00k3mut\x00"


@dataclass(frozen=True)
class Mutant:
    """One edit: replace bytes ``start:end`` of the module's source with ``text``."""

    path: str
    line: int
    col: int
    op: str
    start: int
    end: int
    text: bytes

    @property
    def ident(self) -> str:
        return f"mut:{self.path}:{self.line}:{self.col}:{self.op}"


# --- making mutants ---------------------------------------------------------------------------


def _offsets(src: bytes) -> list[int]:
    """Byte offset of the start of each line (1-based lines: index 0 unused)."""
    out = [0, 0]
    for line in src.splitlines(keepends=True):
        out.append(out[-1] + len(line))
    return out


def _skipped(tree: ast.AST) -> set[int]:
    """Nodes never mutated: docstrings (of modules, functions, attributes), annotations, f-string pieces (their offsets are unreliable)."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            mark(node)  # a docstring, or an attribute's docstring: a statement with no effect
        if isinstance(node, ast.JoinedStr):
            mark(node)
        if isinstance(node, ast.arg):
            mark(node.annotation)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark(node.returns)
        if isinstance(node, ast.AnnAssign):
            mark(node.annotation)
    return skip


def _edits(node: ast.AST) -> list[tuple[str, str]]:
    """(operator name, replacement source) for every mutation of this one node."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP_SWAP:
        new = ast.Compare(node.left, [_CMP_SWAP[type(node.ops[0])]()], node.comparators)
        return [("cmp", f"({ast.unparse(new)})")]
    if isinstance(node, ast.BoolOp):
        new = ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values)
        return [("bool", f"({ast.unparse(new)})")]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [("not", f"({ast.unparse(node.operand)})")]
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            return [("bool-const", f"({not v!r})")]
        if isinstance(v, int):
            return [("const+1", f"({v + 1!r})"), ("const-1", f"({v - 1!r})")]
        if isinstance(v, str) and v:
            return [("needle", repr(_NEEDLE if len(v) > 1 else ""))]
        if isinstance(v, bytes) and v:
            return [("needle", repr(_NEEDLE.encode()))]
    if isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            return [("return-none", "return None")]
    if isinstance(node, _SIMPLE_STMTS):
        return [("drop", "pass")]
    return []


def mutants(path: Path, rel: str) -> list[Mutant]:
    """Every mutant of one module, in source order."""
    src = path.read_bytes()
    tree = ast.parse(src)
    skip = _skipped(tree)
    starts = _offsets(src)
    out: list[Mutant] = []
    for node in ast.walk(tree):
        if id(node) in skip or not hasattr(node, "lineno") or node.end_lineno is None:
            continue
        start = starts[node.lineno] + node.col_offset
        end = starts[node.end_lineno] + node.end_col_offset
        for op, text in _edits(node):
            out.append(Mutant(rel, node.lineno, node.col_offset, op, start, end, text.encode()))
    return sorted(out, key=lambda m: (m.start, m.op))


def apply(src: bytes, m: Mutant) -> bytes:
    return src[: m.start] + m.text + src[m.end :]


# --- running ----------------------------------------------------------------------------------


def copy_tree(repo: Path) -> Path:
    """``git archive HEAD`` of the repository into ``repo/`` of a fresh temporary folder.

    The tests read the corpus and fixtures from ``../shared`` next to the repository: the
    temporary folder gets a ``shared`` link to the same folder (read only, never written)."""
    top = Path(tempfile.mkdtemp(prefix="k3tui-mut-"))
    dest = top / "repo"
    dest.mkdir()
    if (repo.parent / "shared").is_dir():
        (top / "shared").symlink_to(repo.parent / "shared")
    archive = subprocess.run(["git", "-C", str(repo), "archive", "HEAD"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def run_tests(copy: Path, tests: list[str], timeout: float, python: str) -> tuple[str, float]:
    """("pass" | "fail" | "timeout", seconds) for the covering tests in the copy."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    cmd = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *tests]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0
    return ("pass" if r.returncode == 0 else "fail"), time.monotonic() - t0


def equivalents(readme: Path) -> set[str]:
    """Mutant ids recorded as equivalent (with a reason) in bench/README.md."""
    if not readme.is_file():
        return set()
    return set(re.findall(r"`(mut:[^`]+)`", readme.read_text(encoding="utf-8")))


def _check_copy(copy: Path, python: str, module: str) -> None:
    where = subprocess.run(
        [python, "-c", f"import sys, {module}; print(sys.modules[{module!r}].__file__)"],
        cwd=copy,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not where.startswith(str(copy)):
        sys.exit(f"mutation: the copy imports {module} from {where or '?'}, not from {copy}: refusing to run")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("module", help="the module to mutate, e.g. k3tui/textsafe.py")
    ap.add_argument("tests", nargs="+", help="the test files (or node ids) that cover it")
    ap.add_argument("--sample", type=int, default=40, help="mutants drawn at random (default 40; 0 = all)")
    ap.add_argument("--seed", type=int, default=None, help="sampling seed (default: a fresh one, printed)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant's test run")
    ap.add_argument("--repo", default=".", help="the repository (default: the current folder)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    repo = Path(args.repo).resolve()
    python = sys.executable
    copy = copy_tree(repo)
    try:
        return _run(args, seed, copy, python)
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)  # the link to shared is removed, not followed


def _run(args: argparse.Namespace, seed: int, copy: Path, python: str) -> int:
    target = copy / args.module
    if not target.is_file():
        sys.exit(f"mutation: {args.module} is not a file committed at HEAD")
    _check_copy(copy, python, args.module.removesuffix(".py").replace("/", ".").removesuffix(".__init__"))
    original = target.read_bytes()
    every = mutants(target, args.module)
    pick = every if not args.sample or args.sample >= len(every) else random.Random(seed).sample(every, args.sample)
    pick.sort(key=lambda m: m.start)
    print(f"{args.module}: {len(every)} mutants, {len(pick)} sampled (seed {seed}); tests: {' '.join(args.tests)}")
    base, secs = run_tests(copy, args.tests, args.timeout * 3, python)
    if base != "pass":
        sys.exit(f"mutation: the covering tests do not pass on the unmutated copy ({base}): fix that first")
    print(f"baseline: pass in {secs:.1f}s")
    equiv = equivalents(copy / "bench" / "README.md")
    killed, survived, equivalent, invalid = [], [], [], []
    for m in pick:
        mutated = apply(original, m)
        try:
            compile(mutated, str(target), "exec")
        except SyntaxError:
            invalid.append(m)
            continue
        target.write_bytes(mutated)
        try:
            outcome, secs = run_tests(copy, args.tests, args.timeout, python)
        finally:
            target.write_bytes(original)
        if outcome == "pass":
            (equivalent if m.ident in equiv else survived).append(m)
        else:
            killed.append(m)
        print(f"  {outcome:7} {secs:5.1f}s {m.ident}  -> {m.text.decode(errors='replace')[:60]!r}", flush=True)
    counted = len(killed) + len(survived)
    rate = 100.0 * len(killed) / counted if counted else 100.0
    print(
        f"{args.module}: killed {len(killed)}, survived {len(survived)}, equivalent {len(equivalent)}, "
        f"not compilable {len(invalid)}; kill rate {rate:.0f}% (equivalents excluded), seed {seed}"
    )
    for m in survived:
        src_line = original.splitlines()[m.line - 1].decode(errors="replace").strip()
        print(f"SURVIVED `{m.ident}`  {src_line[:90]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
