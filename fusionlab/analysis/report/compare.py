"""Compare two sweeps (two GPUs, two torch versions, ...) or two runs.

    python -m fusionlab.analysis compare results_a results_b --out compare/   # tables + figure
    python -m fusionlab.analysis diff RUN_DIR_A RUN_DIR_B                       # kernel diff (HTA TraceDiff classes)

compare joins the two sweeps' speedups tables on (model, variant, batch, size, mode, dtype) and
reports, per configuration, the median wall and GPU times of both, time_ratio = B / A
(below 1: B is faster) and both speedups over their own eager, across processes and
paired (empty for a sweep without paired_eager); configurations in only one sweep are kept
with the other side empty.
"""
from __future__ import annotations

import os
import sys

import pandas as pd

from fusionlab.analysis.report import plots, style
from fusionlab.analysis.run import fusion, metrics
from fusionlab.analysis.run.run_metrics import ReportError, load_profile
from fusionlab.analysis.sweep import tables
from fusionlab.core.io import printable, read_csv

KEY = ["model", "variant", "batch", "size", "mode", "dtype"]
COLS = ["wall_time_per_iter_ms", "gpu_time_per_iter_ms", "kernels_per_iter", "speedup_wall", "speedup_paired",
        "status"]


def _speedups(results: str) -> pd.DataFrame:
    p = os.path.join(results, "tables", "speedups.csv")
    if not os.path.exists(p):
        raise ReportError(f"{results}: no tables/speedups.csv (run the sweep or `snakemake regenerate` there first)")
    return checked_speedups(tables.with_size(_read_csv(p)), p)


def _shown(raw) -> str:
    """A table's cell as an error quotes it."""
    return "empty" if pd.isna(raw) else repr(raw) if isinstance(raw, str) else f"{raw:g}"


def checked_speedups(s: pd.DataFrame, path: str) -> pd.DataFrame:
    """s, or ReportError naming the file and the column or configuration: a key column or
    the wall time missing, a batch that is not a whole number, a time that is not a finite
    number > 0 (a ratio of it would be infinite or of the wrong sign), or a configuration
    twice (the join would pair each of its rows with each of the other sweep's)."""
    missing = [c for c in KEY + ["wall_time_per_iter_ms"] if c not in s]
    if missing:
        raise ReportError(f"{path}: no column {missing[0]} (a speedups table has {', '.join(KEY)} and "
                          f"wall_time_per_iter_ms)")
    batch = pd.to_numeric(s["batch"], errors="coerce")
    if not (batch.notna() & (batch == batch.round())).all():
        i = (~(batch.notna() & (batch == batch.round()))).idxmax()
        raise ReportError(f"{path}: row {i + 1}: batch is {_shown(s.loc[i, 'batch'])}, not a whole number")
    for col in ("wall_time_per_iter_ms", "gpu_time_per_iter_ms"):
        v = pd.to_numeric(s[col], errors="coerce") if col in s else None
        bad = None if v is None else (s[col].notna() & ~(v > 0) | v.eq(float("inf")))
        if bad is not None and bad.any():
            i = bad.idxmax()
            raise ReportError(f"{path}: row {i + 1}: {col} is {_shown(s.loc[i, col])}, not a time > 0 (empty "
                              f"where a configuration did not run)")
    s = s.assign(batch=batch.astype("int64"), **{c: s[c].astype(str) for c in KEY if c != "batch"})
    twice = s.duplicated(KEY, keep=False)
    if twice.any():
        r = s[twice].iloc[0]
        rows = int((s[KEY] == r[KEY]).all(axis=1).sum())
        raise ReportError(f"{path}: configuration {'/'.join(str(r[c]) for c in KEY)} is in {rows} rows; "
                          f"a speedups table has one row per configuration")
    return s


def _read_csv(path: str) -> pd.DataFrame:
    """The CSV at path; ReportError (one line naming it) when it is empty or cannot be parsed."""
    try:
        return read_csv(path)
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: cannot be read as a table ({type(e).__name__}: "
                          f"{' '.join(str(e).split())[:200]})") from None


def compare(a: str, b: str) -> pd.DataFrame:
    sa, sb = (_speedups(r) for r in (a, b))   # size: "default" in tables without a size column
    m = sa.reindex(columns=KEY + COLS).merge(sb.reindex(columns=KEY + COLS), on=KEY, how="outer", suffixes=("_a", "_b"))
    m["time_ratio_wall"] = m["wall_time_per_iter_ms_b"] / m["wall_time_per_iter_ms_a"]
    m["time_ratio_gpu"] = m["gpu_time_per_iter_ms_b"] / m["gpu_time_per_iter_ms_a"]
    return m.sort_values(KEY, ignore_index=True)


def figure(m: pd.DataFrame, a: str, b: str):
    """One row per configuration that ran ok in both sweeps, sorted: wall time B / A as a
    bar (green: B faster), GPU time B / A as a tick beside it."""
    d = m.dropna(subset=["time_ratio_wall"]).sort_values("time_ratio_wall", ignore_index=True)
    fig, (ax,) = style.figure(w=7.0, h=1.8 + 0.15 * max(len(d), 4))
    if d.empty:
        style.empty(ax, "no configuration ran ok in both sweeps")
    else:
        labels = [f"{r.model}/{r.variant}/{r.batch}" + (f"/{r.size}" if r.size != "default" else "")
                  for r in d.itertuples()]
        y = range(len(d))
        ax.barh(y, d["time_ratio_wall"] - 1, left=1, height=0.7, label="wall time",
                color=["#55a868" if v < 1 else "#c44e52" for v in d["time_ratio_wall"]])
        ax.plot(d["time_ratio_gpu"], y, ls="none", marker="|", ms=7, color="black", label="GPU time")
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_yticks(list(y)); ax.set_yticklabels(labels, fontsize=6)
        ax.set_ylim(-0.7, len(d) - 0.3)
        style.log_axis(ax, "x")
        ax.set_xlabel("time per iteration, B / A (below 1: B faster)")
        style.fit_log_ticks(ax, "x")
        ax.tick_params(axis="x", top=True, labeltop=True)   # a tall figure: the scale at both ends
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"Sweep B against sweep A, per configuration\nA = {a}\nB = {b}", fontsize=8)
    return fig


def main_compare(a: str, b: str, out: str) -> pd.DataFrame:
    """compare(a, b) written to out/compare.csv and its figure; a warning on stderr when
    the two sweeps share no configuration (every ratio is then empty)."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise ReportError(f"--out {out}: a file; give a folder for compare.csv and compare.png")
    m = compare(a, b)
    both = m["wall_time_per_iter_ms_a"].notna() & m["wall_time_per_iter_ms_b"].notna()
    if not both.any():
        print(printable(f"fusionlab compare: warning: {a} and {b} share no configuration that ran in both "
                        f"(model, variant, batch, size, mode, dtype); every ratio in compare.csv is empty"),
              file=sys.stderr)
    tables.write(m, os.path.join(out, "compare.csv"))
    plots.save(figure(m, a, b), os.path.join(out, "compare.png"), os.path.join(out, "compare.svg"))
    return m


KERNEL_NUMBERS = ("calls_per_iter", "time_per_iter_us")   # what diff sums per kernel


def run_kernels(run: str) -> pd.DataFrame:
    """A run folder's kernels.csv (checked_kernels), or the measured range's kernels of a
    profile."""
    if os.path.isdir(run):
        p = os.path.join(run, "kernels.csv")
        if not os.path.exists(p):
            raise ReportError(f"{run}: no kernels.csv (its metrics have not been computed)")
        return checked_kernels(_read_csv(p), p)
    return fusion.annotate(metrics.kernel_table(load_profile(run)))


def checked_kernels(k: pd.DataFrame, path: str) -> pd.DataFrame:
    """k, or ReportError naming the file, its line and column where a kernel has no name
    or its calls or time is not a finite number >= 0 (a truncated or edited kernels.csv
    would otherwise drop kernels from the diff, or count an empty time as 0)."""
    missing = [c for c in ("name", *KERNEL_NUMBERS) if c not in k]
    if missing:
        raise ReportError(f"{path}: no column {missing[0]} (a run's kernels.csv has name, "
                          f"{', '.join(KERNEL_NUMBERS)})")
    if k["name"].isna().any():
        raise ReportError(f"{path}: row {k['name'].isna().idxmax() + 1}: no kernel name")
    if "full_name" in k:
        k["full_name"] = k["full_name"].fillna(k["name"])
    for col in KERNEL_NUMBERS:
        v = pd.to_numeric(k[col], errors="coerce")
        bad = ~(v.ge(0) & v.lt(float("inf")))
        if bad.any():
            i = bad.idxmax()
            raise ReportError(f"{path}: row {i + 1}: {col} is {_shown(k.loc[i, col])}, not a finite number >= 0")
        k[col] = v
    return k
