"""tables/attribution.csv: every run's kernel time per iteration by module path, source line,
op and kernel (analysis.run.attribution, one attribution.csv per run folder), keyed by the
run's ID columns and its folder below runs/ (`run`); and what a model's page says of it.

- build(): the table (TABLE_COLUMNS).
- coverage(): per run, the shares of its kernel time attributed to a module path and to a
  source line.
- movers(): per configuration and variant, the module paths whose time per iteration the
  variant changed most against eager of the same configuration (first repeat of each).
- movers_sentence(): those as words, for a model page's opening sentence."""
from __future__ import annotations

import os

import pandas as pd

from fusionlab.analysis.run import attribution as run_attribution
from fusionlab.analysis.sweep.tables import ID, read_json

FILE = "attribution.csv"
TABLE_COLUMNS = ["run", *ID, *run_attribution.COLUMNS]
CONFIG = [c for c in ID if c not in ("variant", "repeat")]
NOT_MODULES = (run_attribution.UNATTRIBUTED, run_attribution.OUTSIDE)


def run_name(metrics_json: str) -> str:
    """The run's folder below runs/ ('nsys/mlp/eager/train_float32/bs8/r0')."""
    parts = os.path.abspath(os.path.dirname(metrics_json)).split(os.sep)
    return "/".join(parts[parts.index("runs") + 1:]) if "runs" in parts else "/".join(parts[-6:])


def build(metric_files) -> pd.DataFrame:
    """The table of the runs whose metrics.json are metric_files (attribution.csv beside
    each; a run without one has no rows)."""
    parts = []
    for m in metric_files:
        path = os.path.join(os.path.dirname(m), FILE)
        if not os.path.exists(path):
            continue
        rows = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"module": str, "source": str})
        if rows.empty:
            continue
        meta = read_json(m) or {}
        rows.insert(0, "run", run_name(m))
        for i, c in enumerate(ID):
            rows.insert(1 + i, c, meta.get(c))
        parts.append(rows)
    if not parts:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    df = pd.concat(parts, ignore_index=True)
    df["module"] = df["module"].fillna("")
    df["source"] = df["source"].fillna("")
    return df.reindex(columns=TABLE_COLUMNS)


def coverage(table: pd.DataFrame) -> pd.DataFrame:
    """Per run: kernel time per iteration (us) and the shares attributed to a module path
    and to a source line (analysis.run.attribution.coverage)."""
    out = []
    for run, g in table.groupby("run", sort=True):
        c = run_attribution.coverage(g)
        out.append({"run": run, "variant": g["variant"].iloc[0], "time_us": float(g["time_us"].sum()),
                    "module_share": c["module"], "source_share": c["source"]})
    return pd.DataFrame(out, columns=["run", "variant", "time_us", "module_share", "source_share"])


def by_module(table: pd.DataFrame) -> pd.Series:
    """Time per iteration (us) by module path of one run's rows (unattributed and outside
    the model under their own labels)."""
    return table.groupby("module", sort=False)["time_us"].sum()


def _first_repeat(table: pd.DataFrame) -> pd.DataFrame:
    if "repeat" not in table or table.empty:
        return table
    first = table.groupby(CONFIG + ["variant"], dropna=False)["repeat"].transform(lambda r: sorted(r.astype(str))[0])
    return table[table["repeat"].astype(str) == first.astype(str)]


def movers(table: pd.DataFrame, n: int = 3) -> pd.DataFrame:
    """Per configuration and compiled variant, the n module paths whose time per iteration
    changed most (absolute) against eager's: columns CONFIG, variant, module, eager_us,
    variant_us, delta_us (negative: the variant saves time there), rank."""
    cols = [*CONFIG, "variant", "module", "eager_us", "variant_us", "delta_us", "rank"]
    t = _first_repeat(table)
    if t.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for key, g in t.groupby(CONFIG, dropna=False, sort=True):
        eager = g[g["variant"] == "eager"]
        if eager.empty:
            continue
        e = by_module(eager)
        for variant, v in g[g["variant"] != "eager"].groupby("variant", sort=True):
            d = pd.concat([e.rename("eager_us"), by_module(v).rename("variant_us")], axis=1).fillna(0.0)
            d = d.drop(index=[m for m in NOT_MODULES if m in d.index])
            d["delta_us"] = d["variant_us"] - d["eager_us"]
            d = d.reindex(d["delta_us"].abs().sort_values(ascending=False, kind="stable").index).head(n)
            for rank, (module, r) in enumerate(d.iterrows(), 1):
                out.append({**dict(zip(CONFIG, key)), "variant": variant, "module": module or "(model)",
                            "eager_us": r["eager_us"], "variant_us": r["variant_us"], "delta_us": r["delta_us"],
                            "rank": rank})
    return pd.DataFrame(out, columns=cols)


def _us(x: float) -> str:
    return f"{x / 1e3:.2f} ms" if abs(x) >= 1e3 else f"{x:.0f} us"


def movers_sentence(rows: pd.DataFrame) -> str:
    """One configuration and variant's movers() rows as a clause: "most changed: lm_head
    (-1.20 ms: 3.10 ms -> 1.90 ms), ..."; "" without rows."""
    if rows is None or rows.empty:
        return ""
    parts = [f"{r.module} ({'+' if r.delta_us >= 0 else '-'}{_us(abs(r.delta_us))}: "
             f"{_us(r.eager_us)} -> {_us(r.variant_us)})" for r in rows.sort_values("rank").itertuples()]
    return "most changed under " + str(rows["variant"].iloc[0]) + ": " + ", ".join(parts)


def write(metric_files, out_csv: str) -> pd.DataFrame:
    """build() written to out_csv."""
    from fusionlab.core.io import atomic_path
    df = build(metric_files)
    with atomic_path(out_csv) as tmp:
        df.to_csv(tmp, index=False)
    return df
