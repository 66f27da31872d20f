"""Mutation score of the modules that compute what a user reads: small plausible bugs
planted one at a time in a module, each run against the module's tests; a mutant is killed
when a test fails (or the run passes its time limit), survives when they all pass.

    nice -n 15 python benchmarks/mutation.py MODULE [--tests FILE ...] [-k EXPR] [--out DIR]
    nice -n 15 python benchmarks/mutation.py --all --out benchmarks/results/mutation

MODULE is a path such as fusionlab/runner/timing.py; without --tests, MODULES says which
test files cover it. The kinds of mutant (every place each applies; never inside a
docstring, a type annotation or an error message):

- compare: < <= > >= == != is / is not, in / not in, each turned into its neighbours;
- arith: + - * / // % ** swapped (a + b -> a - b, a * b -> a / b, ...), also in += etc.;
- bool: and <-> or; `not x` -> x;
- const: an int n -> n + 1, 0 <-> 1; a float x -> x / 2 (0.0 -> 1.0); True <-> False;
  a string constant -> "XX" + s + "XX" (a metric name, a column, a verdict word);
- call: min <-> max, median <-> fmean (mean), sum -> len, floor <-> ceil, any <-> all;
- swap: the two elements of a 2-tuple or of a binary call's arguments (read and write);
- drop: a statement that assigns or updates (x = ..., x += ...) removed (pass).

Each mutant runs in a process forked from one that imported torch, numpy, pandas and
pytest but nothing of fusionlab: the child writes the mutant into a copy of the package and
imports it from there, then runs pytest in-process. The score per module, the survivors
(line, kind, code) and the run's time go to DIR/<module>.json; benchmarks/results/mutation/
README.md is the table.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import os
import shutil
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the modules scored, and the tests that cover each (pytest arguments)
MODULES = {
    "fusionlab/core/ratios.py": ["tests/test_timing.py", "tests/test_properties.py", "tests/test_paired_oracles.py",
                                 "-k", "ci or ratio or paired or pair or speedup or swapping or bootstrap or quantile"],
    "fusionlab/runner/timing.py": ["tests/test_timing.py", "tests/test_properties.py", "tests/test_runner.py",
                                   "tests/test_paired_oracles.py",
                                   "-k", "window or probe or warm_up or paired or harness or swapping or ci or median"
                                         " or host or pairs or train_loop or quantile or ratio"],
    "fusionlab/analysis/sweep/stats.py": ["tests/test_analysis.py", "tests/test_properties.py",
                                          "tests/test_stats_oracles.py",
                                          "-k", "crossover or speedups or failed_repeat or tie or repeat or verdict"
                                                " or cv or ci or crossing or speedup"],
    "fusionlab/analysis/readers/ncu_report.py": ["tests/test_ncu.py", "tests/test_ncu_fields.py", "-k",
                                                 "reader or key or known_bytes or one_pass or join or csv or units"
                                                 " or flop or lacks or module or table"],
    "fusionlab/analysis/sweep/ledger.py": ["tests/test_ledger.py", "tests/test_ledger_backward.py",
                                           "tests/test_ledger_shares.py"],
    "fusionlab/analysis/run/ledger.py": ["tests/test_ledger.py", "tests/test_ledger_backward.py",
                                         "tests/test_ledger_shares.py"],
    "fusionlab/analysis/report/reproduction/verdict.py": ["tests/test_reproduction_rubric.py",
                                                          "tests/test_claim_verdicts.py"],
    "fusionlab/analysis/sweep/headline.py": ["tests/test_properties.py", "tests/test_story.py",
                                             "tests/test_analysis.py", "tests/test_decompose.py"],
    "fusionlab/analysis/sweep/decompose.py": ["tests/test_decompose.py", "tests/test_story.py",
                                              "tests/test_figures.py::test_breakdown_read_back_is_the_decomposition"],
    "fusionlab/analysis/run/stream.py": ["tests/test_stream.py", "tests/test_properties.py", "tests/test_analysis.py",
                                         "-k", "not synthetic and not generate_workload and not measure_check"
                                               " and not pipeline and not kernel_file"],
}

_CMP = {ast.Lt: [ast.LtE, ast.Gt], ast.LtE: [ast.Lt, ast.GtE], ast.Gt: [ast.GtE, ast.Lt], ast.GtE: [ast.Gt, ast.LtE],
        ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.Is: [ast.IsNot], ast.IsNot: [ast.Is],
        ast.In: [ast.NotIn], ast.NotIn: [ast.In]}
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
          ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.BitOr: ast.BitAnd, ast.BitAnd: ast.BitOr,
          ast.RShift: ast.LShift, ast.LShift: ast.RShift}
_CALLS = {"min": "max", "max": "min", "median": "fmean", "fmean": "median", "mean": "median", "sum": "len",
          "floor": "ceil", "ceil": "floor", "any": "all", "all": "any", "nanmedian": "nanmean",
          "nanmean": "nanmedian", "nanmax": "nanmin", "nanmin": "nanmax", "cummax": "cummin", "cummin": "cummax"}


def _skipped(tree: ast.AST) -> set[int]:
    """ids of the nodes not mutated: docstrings, annotations, error messages, imports."""
    skip = set()

    def all_of(n):
        skip.update(id(x) for x in ast.walk(n))
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body \
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant) \
                and isinstance(n.body[0].value.value, str):
            all_of(n.body[0])
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if n.returns:
                all_of(n.returns)
            for a in n.args.args + n.args.kwonlyargs + n.args.posonlyargs + [n.args.vararg, n.args.kwarg]:
                if a is not None and a.annotation is not None:
                    all_of(a.annotation)
        if isinstance(n, ast.AnnAssign):
            all_of(n.annotation)
        if isinstance(n, (ast.Raise, ast.Import, ast.ImportFrom, ast.JoinedStr, ast.Assert, ast.Global)):
            all_of(n)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("warn", "write", "print"):
            all_of(n)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print":
            all_of(n)
    return skip


def mutants(src: str) -> list[dict]:
    """Every mutant of the source: {"node": walk index, "kind", "what", "line", ...}."""
    tree = ast.parse(src)
    skip = _skipped(tree)
    out = []
    for i, n in enumerate(ast.walk(tree)):
        if id(n) in skip:
            continue
        line = getattr(n, "lineno", None)

        def add(kind, what, **k):
            out.append({"node": i, "kind": kind, "what": what, "line": line, **k})
        if isinstance(n, ast.Compare):
            for j, op in enumerate(n.ops):
                for new in _CMP.get(type(op), []):
                    add("compare", f"{type(op).__name__} -> {new.__name__}", op=j, new=new.__name__)
        elif isinstance(n, (ast.BinOp, ast.AugAssign)) and type(n.op) in _ARITH:
            new = _ARITH[type(n.op)]
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and isinstance(n.left, ast.Constant) \
                    and isinstance(n.left.value, str):
                continue   # %-formatting
            add("arith", f"{type(n.op).__name__} -> {new.__name__}", new=new.__name__)
        elif isinstance(n, ast.BoolOp):
            add("bool", "and <-> or")
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            add("bool", "not x -> x")
        elif isinstance(n, ast.Constant) and not isinstance(n.value, bytes):
            v = n.value
            if isinstance(v, bool):
                add("const", f"{v} -> {not v}")
            elif isinstance(v, int):
                add("const", f"{v} -> {v + 1}")
                if v == 1:
                    add("const", "1 -> 0", value=0)
            elif isinstance(v, float):
                add("const", f"{v} -> {v / 2 if v else 1.0}")
            elif isinstance(v, str) and v:
                add("const", f"{v[:30]!r} -> 'XX..XX'")
        elif isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in _CALLS:
                add("call", f"{name} -> {_CALLS[name]}")
            if len(n.args) == 2 and not n.keywords and not any(isinstance(a, ast.Starred) for a in n.args):
                add("swap", f"{name}(a, b) -> {name}(b, a)")
        elif isinstance(n, ast.Tuple) and len(n.elts) == 2 and isinstance(n.ctx, ast.Load):
            add("swap", "(a, b) -> (b, a)")
        elif isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and not (
                isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id.isupper() or
                                                  isinstance(t, ast.Name) and t.id.startswith("__")
                                                  for t in n.targets)):
            add("drop", "statement removed")
    return out


def apply(src: str, m: dict) -> str:
    """The source with mutant m."""
    tree = ast.parse(src)
    nodes = list(ast.walk(tree))
    n = nodes[m["node"]]
    if m["kind"] == "compare":
        n.ops[m["op"]] = getattr(ast, m["new"])()
    elif m["kind"] == "arith":
        n.op = getattr(ast, m["new"])()
    elif m["kind"] == "bool" and isinstance(n, ast.BoolOp):
        n.op = ast.Or() if isinstance(n.op, ast.And) else ast.And()
    elif m["kind"] in ("bool", "drop"):
        new = n.operand if m["kind"] == "bool" else ast.Pass()
        for parent in nodes:
            for field, value in ast.iter_fields(parent):
                if value is n:
                    setattr(parent, field, new)
                elif isinstance(value, list) and any(x is n for x in value):
                    value[[id(x) for x in value].index(id(n))] = new
    elif m["kind"] == "const":
        v = n.value
        n.value = (not v if isinstance(v, bool) else m.get("value", v + 1) if isinstance(v, int)
                   else (v / 2 if v else 1.0) if isinstance(v, float) else "XX" + v + "XX")
    elif m["kind"] == "call":
        if isinstance(n.func, ast.Name):
            n.func.id = _CALLS[n.func.id]
        else:
            n.func.attr = _CALLS[n.func.attr]
    elif m["kind"] == "swap":
        seq = n.args if isinstance(n, ast.Call) else n.elts
        seq[0], seq[1] = seq[1], seq[0]
    return ast.unparse(ast.fix_missing_locations(tree))


def _child(pkg_root: str, module: str, source: str, pytest_args: list[str]) -> None:
    """In the forked process: the mutant into the copy, the copy first on sys.path, pytest."""
    with open(os.path.join(pkg_root, module), "w") as f:
        f.write(source)
    sys.path.insert(0, pkg_root)
    os.environ["PYTHONPATH"] = pkg_root + os.pathsep + os.environ.get("PYTHONPATH", "")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    import pytest
    rc = pytest.main(["-q", "-x", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly",
                      "-W", "ignore", *pytest_args])
    os._exit(int(rc))


def run_one(pkg_root: str, module: str, source: str, pytest_args: list[str], limit: float) -> str:
    pid = os.fork()
    if pid == 0:
        try:
            _child(pkg_root, module, source, pytest_args)
        finally:
            os._exit(99)
    t0 = time.monotonic()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            rc = os.waitstatus_to_exitcode(status)
            # 1: a test failed; 2-4: pytest stopped (the mutant broke an import: a collection
            # error); 5 (no test ran) and anything else: the run itself failed
            return ("survived" if rc == 0 else "killed" if rc == 1 else f"killed (pytest exit {rc})" if rc in (2, 3, 4)
                    else f"error (exit {rc})")
        if time.monotonic() - t0 > limit:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "killed (time limit)"
        time.sleep(0.05)


def score(module: str, pytest_args: list[str], out_dir: str | None, only: list[int] | None = None) -> dict:
    src = open(os.path.join(ROOT, module)).read()
    # a test file this checkout lacks is left out (a score of the tests as they were)
    pytest_args = [x for x in pytest_args if not x.endswith(".py") or os.path.exists(os.path.join(ROOT, x))]
    work = tempfile.mkdtemp(prefix="mutation-")
    shutil.copytree(os.path.join(ROOT, "fusionlab"), os.path.join(work, "fusionlab"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.chdir(ROOT)
    try:
        t0 = time.monotonic()
        base = run_one(work, module, ast.unparse(ast.parse(src)), pytest_args, 1800)
        base_s = time.monotonic() - t0
        if base != "survived":
            raise SystemExit(f"{module}: the tests fail without a mutant ({base}): {' '.join(pytest_args)}")
        found = mutants(src)
        results = []
        for i, m in enumerate(found):
            if only is not None and i not in only:
                continue
            status = run_one(work, module, apply(src, m), pytest_args, 3 * base_s + 30)
            code = ast.get_source_segment(src, list(ast.walk(ast.parse(src)))[m["node"]]) or ""
            results.append({"id": i, "line": m["line"], "kind": m["kind"], "what": m["what"],
                            "code": code.splitlines()[0][:120] if code else "", "status": status})
            print(f"{module}:{m['line']} #{i} {m['kind']} {m['what']}: {status}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    killed = sum(r["status"].startswith("killed") for r in results)
    rec = {"module": module, "tests": pytest_args, "of": len(found), "mutants": len(results), "killed": killed,
           "survived": sum(r["status"] == "survived" for r in results),
           "errors": sum(r["status"].startswith("error") for r in results),
           "score": killed / len(results) if results else None, "seconds": round(time.monotonic() - t0, 1),
           "baseline_seconds": round(base_s, 1), "results": results}
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, module.replace("/", ".").removesuffix(".py") + ".json"), "w") as f:
            json.dump(rec, f, indent=1)
    return rec


def summary(before_dir: str, after_dir: str) -> str:
    """The markdown table of the scores: each module's sampled mutants killed by the tests
    as they were (before_dir) and with the tests added (the survivors run again: after_dir),
    and each survivor left."""
    lines = ["| module | mutants (of all) | killed before | score before | killed after | score after |",
             "| --- | --- | --- | --- | --- | --- |"]
    left = []

    def is_killed(r):
        return r["status"].startswith("killed") or r["status"] in ("error (exit 2)", "error (exit 3)", "error (exit 4)")
    for name in sorted(os.listdir(before_dir)):
        b = json.load(open(os.path.join(before_dir, name)))
        a_path = os.path.join(after_dir, name)
        again = {r["id"]: r for r in json.load(open(a_path))["results"]} if os.path.exists(a_path) else {}
        after = [r if is_killed(r) else again.get(r["id"], r) for r in b["results"]]
        killed, before = sum(map(is_killed, after)), sum(map(is_killed, b["results"]))
        n = b["mutants"]
        lines.append(f"| {b['module']} | {n} ({b.get('of', n)}) | {before} | {before / n:.0%} | "
                     f"{killed} | {killed / n:.0%} |")
        left += [f"- {b['module']}:{r['line']} #{r['id']} {r['kind']} {r['what']}: `{r['code']}`"
                 for r in after if not is_killed(r)]
    return "\n".join(lines + ["", "Survivors:", ""] + (left or ["- none"])) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("module", nargs="?")
    p.add_argument("--all", action="store_true", help="every module of MODULES, one after the other")
    p.add_argument("--tests", nargs="+", help="pytest arguments (default: MODULES[module])")
    p.add_argument("--only", type=int, nargs="+", help="only these mutant ids")
    p.add_argument("--sample", type=int, help="a sample of this many mutants (seeded: the same ones each time)")
    p.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    p.add_argument("--out", help="write DIR/<module>.json")
    p.add_argument("--summary", nargs=2, metavar=("BEFORE", "AFTER"), help="print the table of two runs' folders")
    a = p.parse_args(argv)
    if a.summary:
        print(summary(*a.summary), end="")
        return 0
    import numpy  # noqa: F401  (imported once, before the forks; nothing of fusionlab is)
    import pandas  # noqa: F401
    import pytest  # noqa: F401
    import torch  # noqa: F401
    with contextlib.suppress(ImportError):   # what tests/conftest.py imports before the tests
        import torch._dynamo  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401
    mods = list(MODULES) if a.all else [a.module]
    if not mods or mods == [None]:
        p.error("name a module or --all")
    for mod in mods:
        if a.list:
            for i, m in enumerate(mutants(open(os.path.join(ROOT, mod)).read())):
                print(f"{mod}:{m['line']} #{i} {m['kind']} {m['what']}")
            continue
        only = a.only
        if a.sample:
            import random
            n = len(mutants(open(os.path.join(ROOT, mod)).read()))
            only = sorted(random.Random(0).sample(range(n), min(a.sample, n)))
        rec = score(mod, a.tests or MODULES[mod], a.out, only)
        print(json.dumps({k: rec[k] for k in ("module", "mutants", "killed", "survived", "errors", "score",
                                              "seconds")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
