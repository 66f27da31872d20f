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

KEY = ["model", "variant", "batch", "size", "mode", "dtype"]
COLS = ["wall_time_per_iter_ms", "gpu_time_per_iter_ms", "kernels_per_iter", "speedup_wall", "speedup_paired",
        "status"]


def _speedups(results: str) -> pd.DataFrame:
    p = os.path.join(results, "tables", "speedups.csv")
    if not os.path.exists(p):
        raise ReportError(f"{results}: no tables/speedups.csv (run the sweep or `snakemake regenerate` there first)")
    return _read_csv(p)


def _read_csv(path: str) -> pd.DataFrame:
    """The CSV at path; ReportError (one line naming it) when it is empty or cannot be parsed."""
    try:
        return pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        raise ReportError(f"{path}: cannot be read as a table ({type(e).__name__}: "
                          f"{' '.join(str(e).split())[:200]})") from None


def compare(a: str, b: str) -> pd.DataFrame:
    sa, sb = (tables.with_size(_speedups(r)) for r in (a, b))   # size: "default" in tables without a size column
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
        print(f"fusionlab compare: warning: {a} and {b} share no configuration that ran in both "
              f"(model, variant, batch, size, mode, dtype); every ratio in compare.csv is empty",
              file=sys.stderr)
    tables.write(m, os.path.join(out, "compare.csv"))
    plots.save(figure(m, a, b), os.path.join(out, "compare.png"), os.path.join(out, "compare.svg"))
    return m


def run_kernels(run: str) -> pd.DataFrame:
    """A run folder's kernels.csv, or the measured range's kernels of a profile."""
    if os.path.isdir(run):
        p = os.path.join(run, "kernels.csv")
        if not os.path.exists(p):
            raise ReportError(f"{run}: no kernels.csv (its metrics have not been computed)")
        return _read_csv(p)
    return fusion.annotate(metrics.kernel_table(load_profile(run)))
