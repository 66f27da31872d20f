"""Do a sweep's headline intervals hold a bare loop's value? The headline recomputed from a
results folder's tables (runs.csv, speedups.csv) with the current code, joined to an oracle
table (model, variant, batch, mode, dtype, oracle: a bare loop's paired speedup, e.g.
benchmarks/bare_loop_processes.py's or bare_loop.py's), each configuration's interval
and whether it holds the oracle, and the fraction that do.

    python benchmarks/interval_coverage.py RESULTS ORACLE.csv
"""
from __future__ import annotations

import sys

import pandas as pd


def coverage(results: str, oracle: pd.DataFrame) -> pd.DataFrame:
    from fusionlab.analysis.sweep import headline
    runs = pd.read_csv(f"{results}/tables/runs.csv", keep_default_na=False, na_values=[""])
    sp = pd.read_csv(f"{results}/tables/speedups.csv", keep_default_na=False, na_values=[""])
    h = headline.table(runs, sp)
    keys = ["model", "variant", "batch", "mode", "dtype"]
    t = oracle.merge(h[keys + ["repeats", "speedup", "speedup_lo", "speedup_hi", "interval", "verdict"]], on=keys)
    t["off"] = t["speedup"] / t["oracle"] - 1
    t["covered"] = (t["speedup_lo"] <= t["oracle"]) & (t["oracle"] <= t["speedup_hi"])
    return t


def main(argv=None) -> int:
    results, oracle = (argv or sys.argv[1:])[:2]
    t = coverage(results, pd.read_csv(oracle))
    pd.set_option("display.width", 250)
    print(t.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"\ninterval holds the oracle: {int(t['covered'].sum())} of {len(t)}; "
          f"within 3%: {int((t['off'].abs() <= 0.03).sum())} of {len(t)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
