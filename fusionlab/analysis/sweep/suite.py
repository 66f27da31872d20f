"""A sweep read as a suite of models (as compiler dashboards report one), from the tables.

Read from tables/headline.csv (the one record of each configuration's speedup, interval
and verdict) and tables/kernels.csv.

- suite:          one row per (variant, mode, dtype), eager excluded: the configurations
                  tried (model x batch x sizes), how many ran ok and matched eager
                  (pass_rate = n_pass / n_asked: n_asked is every configuration the config
                  asks for, those not run counted; every other status counted by name),
                  of those how many have an eager run to compare with (n_compared) and
                  how many of these are host-skewed (n_host_skewed, sweep.headline), and
                  the geometric-mean speedup over those compared configurations (each one's
                  headline speedup; speedup_source names their estimators) with its 95%
                  bootstrap interval over the models swept (resampling whole models; it
                  describes these models, not others), its smallest and largest, the median
                  compile time (compile_s) and break-even iterations (break_even_iters).
                  n_not_run: the configurations the config asks for that have no run
                  (status headline.NOT_RUN), apart from those tried.
- kernel_classes: one row per configuration (model, variant, batch, size, mode, dtype) and
                  kernel class (core.kernel_class): kernel time per iteration (the
                  median over repeats of the class's sum), kernels per iteration and the
                  class's share of the configuration's kernel time.
- slower:         for each configuration whose verdict is slower (the speedup's interval
                  below 1), per kernel class, the kernels eager ran that the variant no
                  longer runs ("gone") and those the variant runs that eager did not
                  ("new"), by name, with time per iteration, the class
                  totals of both sides, and the precision each kernel's name states.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.core import kernel_class
from fusionlab.analysis.sweep import headline, made_from
from fusionlab.analysis.sweep.tables import with_size as tables_with_size
from fusionlab.core.io import atomic_path

CONFIG = ["model", "variant", "batch", "size", "mode", "dtype"]
SUITE_KEYS = ["variant", "mode", "dtype"]
N_BOOT, SEED = 2000, 0


def geomean_ci(values: pd.Series, groups: pd.Series, n: int = N_BOOT, seed: int = SEED,
               level: float = 0.95) -> tuple[float, float, float]:
    """The geometric mean of values and its bootstrap interval resampling whole groups
    (models) with replacement; nan bounds with fewer than two groups."""
    logs = np.log(values.to_numpy(dtype=float))
    gm = float(np.exp(logs.mean())) if len(logs) else np.nan
    names = groups.unique()
    if len(names) < 2:
        return gm, np.nan, np.nan
    by = [logs[(groups == g).to_numpy()] for g in names]
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n):
        pick = rng.integers(0, len(by), len(by))
        boots.append(np.concatenate([by[i] for i in pick]).mean())
    a = (1 - level) / 2
    return gm, float(np.exp(np.quantile(boots, a))), float(np.exp(np.quantile(boots, 1 - a)))


# the suite's counts; its other n_* columns count statuses
COUNTS = ("n_models", "n_configs", "n_asked", "n_pass", "n_compared", "n_host_skewed", "n_not_run")


def host_skewed(ok: pd.DataFrame) -> int:
    """How many of the compared configurations' speedups are host-skewed (sweep.headline)."""
    return int(ok["host_skewed"].astype(str).eq("True").sum()) if "host_skewed" in ok else 0


def suite(h: pd.DataFrame) -> pd.DataFrame:
    """The suite table of a headline table (sweep.headline: one record per configuration
    and variant; module doc)."""
    rows = []
    for key, every in h[h["variant"] != "eager"].groupby(SUITE_KEYS, sort=False):
        g = every[every["status"].ne(headline.NOT_RUN)]   # the configurations tried
        passed = g[g["status"].eq("ok")]
        ok = passed[passed["speedup"].notna() & (passed["speedup"] > 0)]   # those with an eager to compare
        gm, lo, hi = geomean_ci(ok["speedup"], ok["model"])
        est = sorted(ok["estimator"].dropna().unique()) if "estimator" in ok else []
        row = dict(zip(SUITE_KEYS, key), n_models=g["model"].nunique(), n_configs=len(g), n_asked=len(every),
                   n_pass=len(passed), pass_rate=len(passed) / len(every) if len(every) else np.nan,
                   n_compared=len(ok),
                   n_host_skewed=host_skewed(ok),
                   speedup_source=" and ".join(est) or "none",
                   geomean_speedup=gm, geomean_lo=lo, geomean_hi=hi,
                   # no verdict over models from configurations that have none of their own
                   verdict=headline.verdict(gm, lo, hi)
                   if pd.notna(lo) and ok[["speedup_lo", "speedup_hi"]].notna().all().all() else "no interval",
                   min_speedup=ok["speedup"].min() if len(ok) else np.nan,
                   max_speedup=ok["speedup"].max() if len(ok) else np.nan,
                   models_faster=int(ok["verdict"].eq("faster").sum()),
                   models_slower=int(ok["verdict"].eq("slower").sum()),
                   n_not_run=len(every) - len(g))
        for status, n in g["status"].value_counts().items():
            if status != "ok":
                row[f"n_{status}"] = int(n)
        for col, name in (("compile_s", "compile_s_median"), ("break_even_iters", "break_even_iters_median")):
            v = pd.to_numeric(ok[col], errors="coerce") if col in ok else pd.Series(dtype=float)
            row[name] = v.median() if v.notna().any() else np.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    status_cols = sorted(c for c in out.columns if c.startswith("n_") and c not in COUNTS)
    for c in status_cols:
        out[c] = out[c].fillna(0).astype(int)
    return out


def with_class(kernels: pd.DataFrame) -> pd.DataFrame:
    """The kernels table with each kernel's class and the precision its name states."""
    k = kernels.copy()
    # as objects: a full_name column with every cell empty is read as numbers, into which
    # pandas refuses (from pandas 4; warns now) to fill ""
    full = k["full_name"].astype(object) if "full_name" in k else pd.Series("", index=k.index)
    k["kernel_class"] = [kernel_class.kernel_class(n, f) for n, f in zip(k["name"], full.fillna(""))]
    k["precision"] = [kernel_class.precision(n, f) for n, f in zip(k["name"], full.fillna(""))]
    return k


def kernel_classes(kernels: pd.DataFrame) -> pd.DataFrame:
    """The kernel-class split of every configuration (module doc) run on a GPU (the classes
    are of GPU kernels; a CPU run's rows are CPU operators)."""
    if "device" in kernels:
        kernels = kernels[kernels["device"].astype(str) != "cpu"]
    k = with_class(kernels)
    keys = [c for c in CONFIG if c in k]
    per_rep = (k.groupby(keys + ["repeat", "kernel_class"], dropna=False)
                .agg(time_per_iter_us=("time_per_iter_us", "sum"), kernels_per_iter=("calls_per_iter", "sum"))
                .reset_index())
    out = (per_rep.groupby(keys + ["kernel_class"], dropna=False)
                  .agg(time_per_iter_us=("time_per_iter_us", "median"),
                       kernels_per_iter=("kernels_per_iter", "median"), repeats=("repeat", "nunique"))
                  .reset_index())
    total = out.groupby(keys, dropna=False)["time_per_iter_us"].transform("sum")
    out["share"] = out["time_per_iter_us"] / total
    order = {c: i for i, c in enumerate(kernel_class.CLASSES)}
    return (out.assign(_o=out["kernel_class"].map(order)).sort_values(keys + ["_o"])
               .drop(columns="_o").reset_index(drop=True))


def _by_name(k: pd.DataFrame) -> pd.DataFrame:
    """One configuration's kernels by name: median time per iteration over repeats."""
    per = (k.groupby(["repeat", "kernel_class", "name", "precision"])["time_per_iter_us"].sum()
            .reset_index())
    return per.groupby(["kernel_class", "name", "precision"])["time_per_iter_us"].median().reset_index()


def slower(h: pd.DataFrame, kernels: pd.DataFrame, top: int = 5) -> pd.DataFrame:
    """The slower-variant ledger (module doc) of a headline table's configurations whose
    verdict is slower: at most `top` kernels a side per class."""
    bad = h[(h["variant"] != "eager") & h["status"].eq("ok") & h["verdict"].eq("slower")]
    if not len(bad):
        return pd.DataFrame()
    k = with_class(kernels)
    keys = [c for c in CONFIG if c in k and c != "variant"]
    rows = []
    for _, r in bad.iterrows():
        sel = np.logical_and.reduce([k[c].astype(str) == str(r[c]) for c in keys])
        eager = _by_name(k[sel & (k["variant"] == "eager")])
        var = _by_name(k[sel & (k["variant"] == r["variant"])])
        base = {c: r[c] for c in CONFIG if c in r} | {"speedup": r["speedup"], "speedup_lo": r["speedup_lo"],
                                                       "speedup_hi": r["speedup_hi"]}
        for cls in kernel_class.CLASSES:
            e, v = eager[eager["kernel_class"] == cls], var[var["kernel_class"] == cls]
            if not len(e) and not len(v):
                continue
            totals = {"kernel_class": cls, "eager_class_us": e["time_per_iter_us"].sum(),
                      "variant_class_us": v["time_per_iter_us"].sum()}
            for side, mine, other in (("gone", e, v), ("new", v, e)):
                only = mine[~mine["name"].isin(other["name"])].nlargest(top, "time_per_iter_us")
                for _, kr in only.iterrows():
                    rows.append({**base, **totals, "side": side, "name": kr["name"],
                                 "time_per_iter_us": kr["time_per_iter_us"], "precision": kr["precision"]})
    return pd.DataFrame(rows)


def write(headline_csv: str, kernels_csv: str, suite_csv: str, classes_csv: str, slower_csv: str) -> str:
    """The three tables from the sweep's headline and kernels tables; a one-line account."""
    h = tables_with_size(pd.read_csv(headline_csv))
    try:
        k = pd.read_csv(kernels_csv)
    except pd.errors.EmptyDataError:
        k = pd.DataFrame(columns=[*CONFIG, "repeat", "name", "full_name", "calls_per_iter", "time_per_iter_us"])
    tables = {suite_csv: suite(h), classes_csv: kernel_classes(k), slower_csv: slower(h, k)}
    for path, df in tables.items():
        with atomic_path(path) as tmp:
            df.to_csv(tmp, index=False)
    made_from.record([suite_csv], [headline_csv, kernels_csv])
    return (f"suite: {len(tables[suite_csv])} rows; kernel classes: {len(tables[classes_csv])} rows; "
            f"slower-variant ledger: {len(tables[slower_csv])} rows")
