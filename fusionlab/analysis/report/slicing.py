"""The rows a figure draws: one model's rows, its ok runs, and the slice of a sweep along
its main axis with the other axes held (tables.size_axes, tables.fixed_label); a setting
(mode and dtype, which go together) is held whole or drawn apart (by_setting), never mixed."""
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


SETTING = ("mode", "dtype")
NOT_DRAWN = " not drawn: see tables/headline.csv"


def settings(d) -> list[tuple]:
    """The settings d has rows of: its (mode, dtype) pairs as they occur together (a
    dtype belongs to its mode: dtype_by_mode), sorted (inference before train); [()]
    where d has neither column."""
    cols = [c for c in SETTING if c in d]
    if not cols or d.empty:
        return [()]
    return sorted({tuple(str(v) for v in r) for r in d[cols].fillna("").itertuples(index=False)})


def setting_rows(d, setting: tuple):
    """d's rows of one setting (settings())."""
    cols = [c for c in SETTING if c in d]
    if not setting or not cols:
        return d
    return d[np.logical_and.reduce([d[c].fillna("").astype(str) == v for c, v in zip(cols, setting)])]


def setting_label(setting: tuple) -> str:
    """'train amp_bfloat16': a setting as a reader names it."""
    return " ".join(v for v in setting if v)


def first_setting(d) -> tuple:
    """(rows, words) for a figure that draws one setting: d's rows of its first setting
    (inference before train) and the title's words for what is drawn and what is not
    (' at mode=inference dtype=bfloat16; train amp_bfloat16 not drawn: see
    tables/headline.csv'; '' where d has one setting)."""
    ss = settings(d)
    if len(ss) <= 1:
        return d, ""
    cols = [c for c in SETTING if c in d]
    held = " ".join(f"{c}={v}" for c, v in zip(cols, ss[0]) if d[c].nunique() > 1)
    return setting_rows(d, ss[0]), f" at {held}; {', '.join(setting_label(s) for s in ss[1:])}{NOT_DRAWN}"


def with_setting(d):
    """Every row of d with `setting`: setting_label of its mode and dtype, '' where d has one
    setting (a figure keys its marks by it, so that no mark mixes two settings)."""
    ss = settings(d)
    if len(ss) <= 1:
        return d.assign(setting="")
    return pd.concat([setting_rows(d, s).assign(setting=setting_label(s)) for s in ss])


def by_setting(d) -> list[tuple]:
    """(label, rows, axis, fixed) for each setting of d: main_axis_sized of its rows,
    labelled by setting_label ('' where d has one setting), so that a figure draws every
    setting as its own row, bar or panel and never mixes two on one mark."""
    ss = settings(d)
    return [("" if len(ss) == 1 else setting_label(s), *main_axis_sized(setting_rows(d, s))) for s in ss]


def joined_fixed(fixed: list[str]) -> str:
    """The fixed labels of several slices (main_axis_sized) as one: each held value and
    each value left out named once."""
    held, rest = [], []
    for f in fixed:
        h, _, r = f.partition("; ")
        held += [x for x in h.split(" ") if x and x not in held]
        rest += [x for x in r.removesuffix(NOT_DRAWN).split("; ") if x and x not in rest]
    return " ".join(held) + (f"; {'; '.join(rest)}{NOT_DRAWN}" if rest else "")


def main_axis(d):
    """main_axis_sized (below) of the rows of one setting (mode and dtype held together:
    the first pair of settings(), inference before train), the other settings named as
    not drawn."""
    ss = settings(d)
    if len(ss) <= 1:
        return main_axis_sized(d)
    shown = ss[0]
    rows, axis, fixed = main_axis_sized(setting_rows(d, shown))
    cols = [c for c in SETTING if c in d]
    varied = [(c, v) for c, v in zip(cols, shown) if d[c].nunique() > 1]
    held_fixed, _, rest = fixed.partition("; ")
    held = " ".join(filter(None, [held_fixed, " ".join(f"{c}={v}" for c, v in varied)]))
    left = "; ".join(filter(None, [rest.removesuffix(NOT_DRAWN), ", ".join(setting_label(s) for s in ss[1:])]))
    return rows, axis, held + f"; {left}{NOT_DRAWN}"


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
    return f"; {'; '.join(left)}{NOT_DRAWN}" if left else ""


def size_label(runs: pd.DataFrame, model: str | None) -> str:
    """'seq=512', 'hidden=256/1024': the size axes of model's runs (tables.size_axes) and
    their values, '' for none or a sweep-wide figure."""
    if not model or "model" not in runs:
        return ""
    r = runs[runs["model"] == model]
    parts = []
    for a in tables.size_axes(r):
        vals = sorted({int(v) for v in pd.to_numeric(r[a], errors="coerce").dropna()})
        if vals:
            parts.append(f"{a}={'/'.join(str(v) for v in vals)}")
    return ", ".join(parts)


def with_size_axes(d: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """d (a table without the size axis columns, such as tables/kernels.csv) with the
    size axes' values of its (model, size) from runs, and their size_axes, so that a slice
    (slicing.main_axis) holds them apart."""
    axes = [a for a in tables.size_axes(runs) if a not in d]
    if not axes or not {"model", "size"} <= set(d.columns):
        return d
    keys = runs[["model", "size", *axes] + (["size_axes"] if "size_axes" in runs and "size_axes" not in d else [])]
    return d.merge(keys.drop_duplicates(["model", "size"]), on=["model", "size"], how="left")
