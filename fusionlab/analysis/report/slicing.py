"""The rows a figure draws: one model's rows, its ok runs, and the slice of a sweep along
its main axis with the other axes held (tables.size_axes, tables.fixed_label)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.analysis.sweep import tables


def by_model(df, model):
    """df's rows of model (all rows for None: a sweep-wide figure)."""
    return df[df["model"] == model] if model else df


def ok_runs(t, model):
    """The ok rows of the runs table, of model (or all)."""
    r = by_model(t["runs"], model)
    return r[r["status"] == "ok"]


def main_axis(d):
    """main_axis_sized (below) of the rows at one value of each swept category (mode,
    dtype: the first in sorted order, inference before train), the others named as not
    drawn."""
    cats = [c for c in ("mode", "dtype") if c in d and d[c].nunique() > 1]
    if not cats:
        return main_axis_sized(d)
    shown = tuple(sorted(set(d[c].dropna()))[0] for c in cats)
    mask = np.logical_and.reduce([d[c] == v for c, v in zip(cats, shown)])
    rows, axis, fixed = main_axis_sized(d[mask])
    held = " ".join(f"{c}={v}" for c, v in zip(cats, shown))
    held_fixed, _, rest = fixed.partition("; ")
    return rows, axis, " ".join(filter(None, [held_fixed, held])) + "; " + "; ".join(
        filter(None, [rest.removesuffix(" not drawn: see tables/headline.csv"),
                      not_drawn(d, cats, shown)[2:].removesuffix(" not drawn: see tables/headline.csv")])) + \
        " not drawn: see tables/headline.csv"


def main_axis_sized(d):
    """(rows, axis, fixed) for a per-model plot along one axis: the swept axis with the
    most values (batch on ties, and when only batch is swept), and the rows at the most
    common values of the other swept axes, labelled by fixed ("dim=1024", "" if none,
    with the values left out named: not_drawn).
    A size every row has at a value other than the model's default (the run's size label
    names it: "dim1024") is in fixed too."""
    axes = [a for a in ["batch"] + tables.size_axes(d) if a in d and d[a].nunique() > 1]
    label = d["size"].astype(str) if "size" in d else pd.Series("default", index=d.index)
    held = {a: d[a].iloc[0] for a in tables.size_axes(d) if a not in axes and d[a].nunique() == 1
            and d[a].notna().all() and label.str.contains(rf"(?:^|-){a}\d").all()}
    if not axes:
        return d, "batch", tables.fixed_label(held)
    axis = max(axes, key=lambda a: (d[a].nunique(), a == "batch"))
    others = [a for a in axes if a != axis]
    if not others:
        return d, axis, tables.fixed_label(held)
    best = d.groupby(others).size().idxmax()
    best = best if isinstance(best, tuple) else (best,)
    mask = np.logical_and.reduce([d[a] == v for a, v in zip(others, best)])
    return d[mask], axis, tables.fixed_label({**dict(zip(others, best)), **held}) + not_drawn(d, others, best)


def not_drawn(d, axes, shown) -> str:
    """'; hidden 256 not drawn: see tables/headline.csv': the swept values of axes that a
    slice at shown leaves out, named so that a figure never drops a swept size silently."""
    left = [f"{a} {', '.join(f'{v:g}' if isinstance(v, (int, float)) else str(v) for v in sorted(set(d[a].dropna())) if v != s)}"
            for a, s in zip(axes, shown) if d[a].nunique() > 1]
    return f"; {'; '.join(left)} not drawn: see tables/headline.csv" if left else ""
