"""tables/attribution.csv: every run's kernel time per iteration by module path, source line,
op and kernel (analysis.run.attribution, one attribution.csv per run folder), keyed by the
run's ID columns and its folder below runs/ (`run`); and what a model's page says of it.

- build(): the table (TABLE_COLUMNS).
- coverage(): per run, the shares of its kernel time attributed to a module path and to a
  source line of the model's, and placed on the training loop's own parts (the loss, the
  optimizer step, zero_grad: analysis.run.attribution.LOOP).
- chosen(): per configuration and variant, the rows of one repeat: the one with the most of
  its kernel time attributed to a module path (the first of those; a compiled run whose
  graphs all came from Inductor's cache has no node meta and none attributed).
- movers(): per configuration and variant, the module paths whose own time per iteration
  (its rows, its submodules' apart) the variant changed most against eager of the same
  configuration (chosen() repeats), each path as it is or with its layer indices folded (`encoder.layer.*.attention.self`: the
  sum over a stack of identical blocks). The training loop's parts are left out (NOT_MODULES:
  not module paths; eager code in every variant, the same kernels), as are the rows
  unattributed or outside the model.
- movers_sentence(): those as words, for a model page's opening sentence."""
from __future__ import annotations

import os
import re

import pandas as pd

from fusionlab.analysis.run import attribution as run_attribution
from fusionlab.analysis.sweep.tables import ID, read_json

FILE = "attribution.csv"
TABLE_COLUMNS = ["run", *ID, *run_attribution.COLUMNS]
CONFIG = [c for c in ID if c not in ("variant", "repeat")]
NOT_MODULES = (run_attribution.UNATTRIBUTED, run_attribution.OUTSIDE, *run_attribution.LOOP_MODULES)


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


def read(path: str | None) -> pd.DataFrame:
    """The table written at path (module and source "" where empty); an empty one with its
    columns where there is none."""
    if not path or not os.path.exists(path):
        return pd.DataFrame(columns=TABLE_COLUMNS)
    return pd.read_csv(path, keep_default_na=False, na_values={c: [""] for c in ("time_us", "share", "batch")},
                       low_memory=False)


def coverage(table: pd.DataFrame) -> pd.DataFrame:
    """Per run: kernel time per iteration (us), the shares attributed to a module path and
    to a source line, and the share on the training loop's parts (loop_share;
    analysis.run.attribution.coverage)."""
    out = []
    for run, g in table.groupby("run", sort=True):
        c = run_attribution.coverage(g)
        out.append({"run": run, "variant": g["variant"].iloc[0], "time_us": float(g["time_us"].sum()),
                    "module_share": c["module"], "source_share": c["source"], "loop_share": c["loop"]})
    return pd.DataFrame(out, columns=["run", "variant", "time_us", "module_share", "source_share", "loop_share"])


def by_module(table: pd.DataFrame) -> pd.Series:
    """Time per iteration (us) by module path of one run's rows (unattributed and outside
    the model under their own labels)."""
    return table.groupby("module", sort=False)["time_us"].sum()


def chosen(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of one repeat per configuration and variant (module doc)."""
    if "repeat" not in table or table.empty:
        return table
    keep = []
    for _, g in table.groupby(CONFIG + ["variant"], dropna=False, sort=False):
        shares = {r: run_attribution.coverage(x)["module"] for r, x in g.groupby(g["repeat"].astype(str), sort=True)}
        best = max(shares, key=lambda r: (shares[r] if shares[r] == shares[r] else -1.0, -sorted(shares).index(r)))
        keep.append(g[g["repeat"].astype(str) == best])
    return pd.concat(keep).sort_index()


_INDEX = re.compile(r"(?<=\.)\d+(?=\.|$)")


def fold(module: str) -> str:
    """A module path with its layer indices as `*`: 'encoder.layer.3.attention' ->
    'encoder.layer.*.attention'; the labels outside the model as they are."""
    return module if module in NOT_MODULES else _INDEX.sub("*", module)


def movers(table: pd.DataFrame, n: int = 3, folded: bool = False) -> pd.DataFrame:
    """Per configuration and compiled variant, the n module paths (folded: with their layer
    indices folded, fold()) whose time per iteration changed most (absolute) against
    eager's: columns CONFIG, variant, module, eager_us, variant_us, delta_us (negative: the
    variant saves time there), rank, and the module shares of the two runs attributed
    (eager_attributed, variant_attributed)."""
    cols = [*CONFIG, "variant", "module", "eager_us", "variant_us", "delta_us", "rank", "eager_attributed",
            "variant_attributed", "eager_loop", "variant_loop"]
    t = chosen(table)
    if t.empty:
        return pd.DataFrame(columns=cols)
    if folded:
        t = t.assign(module=t["module"].astype(str).map(fold))
    out = []
    for key, g in t.groupby(CONFIG, dropna=False, sort=True):
        eager = g[g["variant"] == "eager"]
        if eager.empty:
            continue
        e = by_module(eager)
        for variant, v in g[g["variant"] != "eager"].groupby("variant", sort=True):
            ce, cv = run_attribution.coverage(eager), run_attribution.coverage(v)
            shares = {"eager_attributed": ce["module"], "variant_attributed": cv["module"],
                      "eager_loop": ce["loop"], "variant_loop": cv["loop"]}
            d = pd.concat([e.rename("eager_us"), by_module(v).rename("variant_us")], axis=1).fillna(0.0)
            d = d.drop(index=[m for m in NOT_MODULES if m in d.index])
            d["delta_us"] = d["variant_us"] - d["eager_us"]
            d = d.reindex(d["delta_us"].abs().sort_values(ascending=False, kind="stable").index).head(n)
            for rank, (module, r) in enumerate(d.iterrows(), 1):
                out.append({**dict(zip(CONFIG, key)), "variant": variant, "module": module or "(model)",
                            "eager_us": r["eager_us"], "variant_us": r["variant_us"], "delta_us": r["delta_us"],
                            "rank": rank, **shares})
    return pd.DataFrame(out, columns=cols)


def _us(x: float) -> str:
    return f"{x / 1e3:.2f} ms" if abs(x) >= 1e3 else f"{x:.0f} us"


def movers_sentence(rows: pd.DataFrame) -> str:
    """One configuration and variant's movers() rows as a clause: "most changed: lm_head
    (-1.20 ms: 3.10 ms -> 1.90 ms), ...", and each side's share on a module path where it
    is under 99% (with its training loop's share where there is one); "" without rows."""
    if rows is None or rows.empty:
        return ""
    parts = [f"{r.module} ({'+' if r.delta_us >= 0 else '-'}{_us(abs(r.delta_us))}: "
             f"{_us(r.eager_us)} -> {_us(r.variant_us)})" for r in rows.sort_values("rank").itertuples()]
    low = []
    for side, name in (("eager", "eager"), ("variant", str(rows["variant"].iloc[0]))):
        share = rows[f"{side}_attributed"].iloc[0] if f"{side}_attributed" in rows else float("nan")
        loop = rows[f"{side}_loop"].iloc[0] if f"{side}_loop" in rows else 0.0
        if share == share and share < 0.99:
            low.append(f"{name} {share:.0%}" + (f", its training loop's loss and optimizer step {loop:.0%}"
                                                if loop == loop and loop >= 0.005 else ""))
    return ("most changed under " + str(rows["variant"].iloc[0]) + ": " + ", ".join(parts)
            + (f" (kernel time attributed to a module: {'; '.join(low)})" if low else ""))


def write(metric_files, out_csv: str) -> pd.DataFrame:
    """build() written to out_csv."""
    from fusionlab.core.io import atomic_path
    df = build(metric_files)
    with atomic_path(out_csv) as tmp:
        df.to_csv(tmp, index=False)
    return df
