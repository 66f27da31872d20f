"""The tables an audit reads, checked before it reads them: each present, and none older
than what it is made from (a table left from an earlier build, beside inputs that changed
or a build that stopped half way, would let the audit pass on numbers nothing made now).

INPUTS maps each table (relative to the results folder) to what it is made from: the run
folders' metrics.json files (RUNS) or other tables. check(audit, results) adds checks per
table to an audit.Audit: present (REQUIRED ones), and not made from other inputs than those
there now. Where the job that wrote it recorded its inputs (analysis.sweep.made_from:
tables/made_from.json), by their bytes: each recorded input still there with the same
digest, and a metrics.json it did not read no newer than it. Else by time: the table's
time at least its newest input's (a copy keeps no times: cp -r or a git checkout can give
a table an earlier time than its inputs; `fusionlab restore` gives every file one time,
and equal times pass). summary.md is the audit's product (its banner quotes the audit),
not an input.

read_table and read_text read what the audit checks, bounded (core.io): a table, caption or
summary that is there but cannot be read is a violation naming it, never a hang.
"""
from __future__ import annotations

import os

from fusionlab.analysis.sweep import headline, made_from
from fusionlab.core import io

RUNS = "runs/**/metrics.json"
INPUTS = {"tables/runs.csv": [RUNS], "tables/speedups.csv": [RUNS], "tables/kernels.csv": [RUNS],
          "tables/headline.csv": ["tables/speedups.csv", "tables/runs.csv"],
          "tables/suite.csv": ["tables/headline.csv", "tables/kernels.csv"]}
REQUIRED = ("tables/runs.csv", "tables/speedups.csv", "tables/headline.csv")
HEADLINE_COLUMNS = ("model", "variant", "batch", "mode", "dtype", "status", "speedup", "speedup_lo", "speedup_hi",
                    "verdict", "wall_ms", "eager_wall_ms", "saved_ms", *headline.PARTS)   # what the audit reads
SUITE_COLUMNS = ("variant", "mode", "dtype", "n_configs", "n_pass", "geomean_speedup", "geomean_lo", "geomean_hi",
                 "verdict")


def _metrics(results: str) -> dict[str, float]:
    """Each metrics.json under results/runs (relative to results; links not followed) and
    its time."""
    out = {}
    for here, dirs, files in os.walk(os.path.join(results, "runs")):
        if "metrics.json" in files:
            p = os.path.join(here, "metrics.json")
            out[os.path.relpath(p, results)] = os.stat(p).st_mtime
    return out


def _newest(times: dict[str, float]) -> tuple[float | None, str | None]:
    return max(((t, p) for p, t in times.items()), default=(None, None))


def _time(results: str, rel: str) -> float | None:
    p = os.path.join(results, rel)
    return os.stat(p).st_mtime if os.path.isfile(p) else None


STALE = " (a table left from an earlier build: build the tables again)"


def check(a, results: str) -> None:
    """Add the checks of the module doc to audit a (an audit.Audit: a.check(ok, where, why))."""
    runs = _metrics(results)
    made = made_from.read(results)
    for rel, inputs in INPUTS.items():
        t = _time(results, rel)
        if t is None:
            if os.path.lexists(os.path.join(results, rel)):
                a.check(False, rel, "not a regular file (a folder, a pipe, or a link to a device): the audit "
                                    "reads no table from it")
            elif rel in REQUIRED:
                a.check(False, rel, "missing: the audit needs it (build the tables again: snakemake tables)")
            continue
        if rel in made:
            _by_digest(a, results, rel, t, made[rel], inputs, runs)
            continue
        for src in inputs:
            if src == RUNS:
                ts, name = _newest(runs)
            else:
                ts, name = _time(results, src), src
            if ts is not None:
                a.check(t >= ts, rel, f"older than its input {name}{STALE}")


def _by_digest(a, results: str, rel: str, t: float, recorded: dict, inputs: list[str], runs: dict) -> None:
    """A table's inputs against the digests its job recorded; a metrics.json it did not read
    against its time (a run added since, or one of another sweep kept in the folder)."""
    changed = [src for src, d in sorted(recorded.items()) if made_from.digest(os.path.join(results, src)) != d]
    first = changed[0] if changed else ""
    gone = changed and not os.path.exists(os.path.join(results, first))
    a.check(not changed, rel, (f"made from {first}, which is gone" if gone else
                               f"made from another {first} than the one there now") + STALE)
    for src in inputs:
        unread = {p: ts for p, ts in runs.items() if p not in recorded} if src == RUNS else {}
        ts, name = _newest(unread)
        if ts is not None:
            a.check(t >= ts, rel, f"older than {name}, which it was not made from{STALE}")


def _unreadable(a, path: str, e: Exception) -> None:
    a.check(False, path, f"cannot be read ({type(e).__name__}: {' '.join(str(e).split())[:200]})")


def read_table(path: str, a=None):
    """The table at path (core.io.read_csv: a regular file, bounded), None where there is
    none or it cannot be read; with an audit a, one that is there but cannot be read (a
    pipe, a link to a device, past the cap, not CSV) is its violation."""
    try:
        return io.read_csv(path)
    except (OSError, ValueError) as e:
        if a is not None and os.path.lexists(path):
            _unreadable(a, path, e)
        return None


def read_text(a, path: str) -> str | None:
    """The text at path (core.io.read_text), None where there is none; one there that
    cannot be read is the audit's violation."""
    if not os.path.lexists(path):
        return None
    try:
        return io.read_text(path)
    except (OSError, ValueError) as e:
        _unreadable(a, path, e)
        return None
