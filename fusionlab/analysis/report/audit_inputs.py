"""The tables an audit reads, checked before it reads them: each present, and none older
than what it is made from (a table left from an earlier build, beside inputs that changed
or a build that stopped half way, would let the audit pass on numbers nothing made now).

INPUTS maps each table (relative to the results folder) to what it is made from: the run
folders' metrics.json files (RUNS) or other tables. check(audit, results) adds one check
per table to an audit.Audit: present (REQUIRED ones), and its time at least its newest
input's (tables made from RUNS where the folder has run folders). Equal times pass
(`fusionlab restore` gives every file one time). summary.md is the audit's product (its
banner quotes the audit), not an input.
"""
from __future__ import annotations

import os

RUNS = "runs/**/metrics.json"
INPUTS = {"tables/runs.csv": [RUNS], "tables/speedups.csv": [RUNS], "tables/kernels.csv": [RUNS],
          "tables/headline.csv": ["tables/speedups.csv", "tables/runs.csv"],
          "tables/suite.csv": ["tables/headline.csv", "tables/kernels.csv"]}
REQUIRED = ("tables/runs.csv", "tables/speedups.csv", "tables/headline.csv")


def _newest_metrics(results: str) -> tuple[float, str] | None:
    """(time, path) of the newest metrics.json under results/runs (links not followed)."""
    best = None
    for here, dirs, files in os.walk(os.path.join(results, "runs")):
        if "metrics.json" in files:
            p = os.path.join(here, "metrics.json")
            t = os.stat(p).st_mtime
            if best is None or t > best[0]:
                best = (t, p)
    return best


def _time(results: str, rel: str) -> float | None:
    p = os.path.join(results, rel)
    return os.stat(p).st_mtime if os.path.isfile(p) else None


def check(a, results: str) -> None:
    """Add the checks of the module doc to audit a (an audit.Audit: a.check(ok, where, why))."""
    runs = None
    for rel, inputs in INPUTS.items():
        t = _time(results, rel)
        if t is None:
            if rel in REQUIRED:
                a.check(False, rel, "missing: the audit needs it (build the tables again: snakemake tables)")
            continue
        for src in inputs:
            if src == RUNS:
                runs = runs if runs is not None else (_newest_metrics(results) or (None, None))
                ts, name = runs
            else:
                ts, name = _time(results, src), src
            if ts is not None:
                a.check(t >= ts, rel, f"older than its input {os.path.relpath(name, results) if os.path.isabs(name) else name}"
                        f" (a table left from an earlier build: build the tables again)")
