"""summary.md's sections on a sweep read as a suite of models, from the suite tables
(analysis.sweep.suite: tables/suite.csv, kernel_classes.csv, slower.csv); every number is
a cell of those tables."""
from __future__ import annotations

import pandas as pd

from fusionlab.analysis.sweep import headline, suite as sweep_suite
from fusionlab.analysis.report.text import HOST_SKEWED, fmt_time, md_table
from fusionlab.core import kernel_class

VERDICT_WORDS = {"faster": "faster", "slower": "slower", "inconclusive": "inconclusive (the interval holds 1)",
                 "no interval": "no verdict (one model, or a configuration without its own interval)"}


NONE_COMPARED = "none (no configuration with a speedup)"


def _x(v) -> str:
    return f"{v:.2f}x" if pd.notna(v) else ""


def _range_notes(r) -> str:
    """What the range leaves out or holds with a caveat: configurations without an eager
    run, host-skewed speedups (text.HOST_SKEWED)."""
    notes = []
    if r.get("n_compared", r["n_pass"]) < r["n_pass"]:
        notes += [f"{int(r['n_compared'])} compared", f"{int(r['n_pass'] - r['n_compared'])} without an eager run"]
    skewed = r.get("n_host_skewed")
    if pd.notna(skewed) and skewed > 0:
        notes.append(f"{int(skewed)} {HOST_SKEWED}, in the mean")
    return f" ({'; '.join(notes)})" if notes else ""


def _break_even(r) -> str:
    """The median break-even count, over the configurations whose own interval says faster
    (sweep.headline); where there is none, why: none is faster, or none has an interval."""
    if pd.notna(r["break_even_iters_median"]):
        return f"{r['break_even_iters_median']:.0f}"
    return ("none (no configuration faster by its own interval)" if r["verdict"] == "no interval"
            else "none (no configuration faster)")


def suite_md(suite: pd.DataFrame | None) -> list[str]:
    """The geometric-mean table: one row per variant, mode and dtype."""
    if suite is None or not len(suite) or suite["n_models"].max() < 2:
        return []
    status_cols = [c for c in suite.columns if c.startswith("n_") and c not in sweep_suite.COUNTS]
    rows = []
    for _, r in suite.iterrows():
        failed = ", ".join(f"{int(r[c])} {c[2:]}" for c in status_cols if r[c])
        rows.append({"variant": r["variant"], "mode": r["mode"], "dtype": r["dtype"],
                     "geomean speedup [95% bootstrap]": f"{_x(r['geomean_speedup'])} "
                     f"[{_x(r['geomean_lo'])}, {_x(r['geomean_hi'])}] over the {int(r['n_models'])} models swept"
                     if pd.notna(r["geomean_lo"]) else _x(r["geomean_speedup"]) or NONE_COMPARED,
                     "reads": VERDICT_WORDS.get(r["verdict"], r["verdict"]),
                     "range": (f"{_x(r['min_speedup'])} to {_x(r['max_speedup'])}" if pd.notna(r["min_speedup"])
                               else "none") + _range_notes(r),
                     "passed": (f"{int(r['n_pass'])} of {int(r.get('n_asked', r['n_configs']))} asked for "
                                f"({r['pass_rate']:.0%})" if r.get("n_asked", r["n_configs"]) else "none asked for")
                     + (f"; {int(r['n_not_run'])} {headline.NOT_RUN}" if r.get("n_not_run", 0) > 0 else ""),
                     "not passed": failed or "none",
                     "compile s (median)": f"{r['compile_s_median']:.1f}" if pd.notna(r["compile_s_median"]) else "",
                     "break-even iterations (median)": _break_even(r)})
    src = next((s for s in suite["speedup_source"] if s != "none"), "paired")
    return ["## The suite", "",
            f"Each variant against eager over the models' configurations (model x batch x sizes) that ran "
            f"and matched eager: the geometric mean of their {src} speedups, with its 95% bootstrap interval "
            "over the models swept (resampling whole models: it describes these models, not others), and the "
            "pass rate (configurations that ran and matched eager, of every configuration asked for, those "
            "not run counted). Compile time: the variant's first call less "
            "eager's; break-even: compile time over the time saved per iteration.", "",
            md_table(pd.DataFrame(rows)), ""]


def classes_md(classes: pd.DataFrame | None) -> list[str]:
    """Kernel time per iteration by class, one row per configuration, and its largest class."""
    if classes is None or not len(classes):
        return []
    keys = [c for c in ("model", "mode", "dtype", "batch", "size", "variant") if c in classes]
    wide = classes.pivot_table(index=keys, columns="kernel_class", values="time_per_iter_us", aggfunc="sum")
    cols = [c for c in kernel_class.CLASSES if c in wide.columns]
    wide = wide[cols]
    out = wide.reset_index()[keys]
    if "size" in out and out["size"].nunique() == 1:
        out = out.drop(columns="size")
    for c in cols:
        out[c] = [fmt_time(v / 1e3) if pd.notna(v) else "" for v in wide[c]]
    out["largest"] = [f"{row.idxmax()} ({row.max() / row.sum():.0%})" for _, row in wide.fillna(0).iterrows()]
    return ["## Time by kernel class", "",
            "Kernel time per iteration (traced, median over repeats) by what each kernel does "
            "(fusionlab.core.kernel_class names the rule for each class).", "",
            md_table(out), ""]


def _kernels(c: pd.DataFrame, side: str, top: int) -> str:
    """The `top` kernels of one side of a class's ledger rows: name (time, precision)."""
    s = c[c["side"] == side].nlargest(top, "time_per_iter_us")
    return "; ".join(f"{n} ({fmt_time(t / 1e3)}{', ' + p if p == p and p else ''})"
                     for n, t, p in zip(s["name"], s["time_per_iter_us"], s["precision"])) or "none"


def slower_md(slower: pd.DataFrame | None, top: int = 3) -> list[str]:
    """Per configuration where a variant is decisively slower: the eager kernels it no longer
    runs and what runs in their place, by class, with both times and the stated precision."""
    if slower is None or not len(slower):
        return []
    out = ["## Where a variant is slower than eager", "",
           "Configurations whose speedup interval lies below 1: per kernel class, eager's kernels the "
           "variant no longer runs and the kernels it runs in their place (traced time per iteration; "
           "precision as the kernel's name states it).", ""]
    keys = [c for c in ("model", "variant", "mode", "dtype", "batch", "size") if c in slower]
    for key, g in slower.groupby(keys, sort=False):
        r = g.iloc[0]
        head = " ".join(str(v) for v in key if v != "default")
        out.append(f"- **{head}**: {_x(r['speedup'])} [{_x(r['speedup_lo'])}, {_x(r['speedup_hi'])}]")
        for cls, c in g.groupby("kernel_class", sort=False):
            e, v = c["eager_class_us"].iloc[0], c["variant_class_us"].iloc[0]
            out.append(f"  - {cls}: eager {fmt_time(e / 1e3)}, {r['variant']} {fmt_time(v / 1e3)}. "
                       f"Gone: {_kernels(c, 'gone', top)}. In their place: {_kernels(c, 'new', top)}.")
    return out + [""]


def sections(suite: dict | None) -> list[str]:
    """The three sections, from {"suite": ..., "kernel_classes": ..., "slower": ...}."""
    suite = suite or {}
    return [*suite_md(suite.get("suite")), *slower_md(suite.get("slower")), *classes_md(suite.get("kernel_classes"))]
