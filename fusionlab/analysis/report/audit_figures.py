"""The figures' data against their records: each mark a figure writes (report.plots,
figures/<figure>/<scope>.data.csv; style.record) whose quantity names a column of a
table other than the headline ("kernels.time_per_iter_us": tables/kernels.csv), its
value recomputed from that table's rows, its label's text from its value, and each
caption number found in the caption written beside the figure. The headline's own
columns (a quantity with no table named) are audit.check_figure's.

A mark's fields read here (report.plots.MARK_COLUMNS and those after them):
- quantity: "<table>.<column>", or "<table>.<a>/<b>" for a ratio of two columns; the
  table "marks" is the figure's own marks (own_marks), "kernel_roofline" the per-kernel
  roofline of tables/kernels.csv (sweep.roofline);
- agg: how the rows the mark names give its value (AGGREGATES): one row, the median,
  geometric mean of the positive values, sum, smallest or largest positive value, the number of non-empty values, of
  distinct ones or of true ones;
- the keys of KEYS that are not empty: the rows the value comes from (a table's rows of
  status other than ok are never drawn);
- text and fmt: a label and the FORMATS entry that writes value (the text holds it);
- mark "caption": text is a number the caption (<scope>.rst) quotes.

A data file with no row beside a drawn figure (its caption not "No data: ...", or with no
caption, its image there and no "no data" mark: report.plots.marker) is a violation: the
figure's marks are not written, so none of them is checked.

check(a, results): every check on a results folder, each through a.check(ok, where, what)."""
from __future__ import annotations

import glob
import math
import os

import numpy as np
import pandas as pd

from fusionlab.analysis.report import audit_inputs, audit_match
from fusionlab.analysis.report.text import fmt_time, iterations
from fusionlab.analysis.sweep import roofline as sweep_roofline
from fusionlab.analysis.sweep import tables
from fusionlab.core.io import read_csv

TABLES = ("runs", "speedups", "kernels", "kernel_resources", "kernel_classes", "scaling", "suite", "headline",
          "gap_ledger", "attribution")
KEYS = ("model", "variant", "batch", "size", "mode", "dtype", "device", "repeat", "name", "full_name", "kernel_class",
        "kernel", "axis", "fixed", "metric", "term")
REL = audit_match.REL
NO_DATA = "No data:"


def _pct(v):
    return "<1%" if 0 < v < 0.005 else f"{100 * v:.0f}%"


# a label's format by name: value -> the text the label holds
FORMATS = {
    "g": lambda v: f"{v:g}",
    "3g": lambda v: f"{v:.3g}",
    "2f": lambda v: f"{v:.2f}",
    "x2f": lambda v: f"{v:.2f}x",
    "share": _pct,                              # a share 0..1 as whole percent
    "share_whole": lambda v: "<1" if 0 < v < 0.005 else f"{100 * v:.0f}",   # a share as whole percent, no sign
    "ms": fmt_time,                             # a time in ms, in the unit that fits it
    "us": lambda v: fmt_time(v / 1e3),          # a time in us, in the unit that fits it
    "s": lambda v: fmt_time(v * 1e3),           # a time in s, in the unit that fits it
    "iterations": iterations,
}


def _positive(s: pd.Series) -> pd.Series:
    return s[s > 0]


AGGREGATES = {
    "one": lambda s: s.iloc[0] if len(s) == 1 else math.nan,
    "median": lambda s: s.median(),
    "geomean": lambda s: float(np.exp(np.log(_positive(s)).mean())) if (s > 0).any() else math.nan,
    "sum": lambda s: s.sum(),
    "min": lambda s: _positive(s).min(),
    "max": lambda s: s.max(),   # the largest value there is (0 where every one is 0)
    "count": lambda s: float(s.dropna().astype(str).ne("").sum()),   # the values that are not empty
    "nunique": lambda s: float(s.nunique()),
    "trues": lambda s: float(s.astype(str).str.lower().isin(["true", "1", "1.0"]).sum()),   # the true values
}


def _read(path: str) -> pd.DataFrame | None:
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            try:
                return read_csv(p, low_memory=False)
            except (OSError, ValueError):
                return None
    return None


def load(results: str) -> dict:
    """The tables a mark may name, each as figures read them (a size column; rows of
    status ok where the table has a status); None for a table not there."""
    out = {}
    for name in TABLES:
        t = _read(os.path.join(results, "tables", f"{name}.csv"))
        if t is not None and {"model", "batch"} <= set(t.columns):
            t = tables.with_size(t)
        if t is not None and "status" in t and name != "headline":
            t = t[t["status"] == "ok"]
        out[name] = t
    # the per-kernel roofline the kernel_roofline figure draws, as the sweep computes it from the kernels
    out["kernel_roofline"] = None if out["kernels"] is None else sweep_roofline.kernel_roofline(out["kernels"])
    return out


def _text(col: pd.Series, key: str) -> np.ndarray:
    """A key column as comparable text (batch and repeat as numbers, '' for empty)."""
    if key in ("batch", "repeat"):
        v = pd.to_numeric(col, errors="coerce")
        return np.array(["" if x != x else f"{x:g}" for x in v], dtype=object)
    return col.fillna("").astype(str).to_numpy(dtype=object)


def _want(key: str, v) -> str | None:
    """A mark's key value as _text writes it; None for an empty one (no filter)."""
    if v is None or (isinstance(v, float) and v != v) or v == "":
        return None
    return f"{float(v):g}" if key in ("batch", "repeat") else str(v)


def mask(table: pd.DataFrame, mark: dict, cache: dict | None = None) -> np.ndarray:
    """Which rows of table the mark's non-empty KEYS name (cache: the key columns as
    text, kept between calls on one table)."""
    cache = {} if cache is None else cache
    m = np.ones(len(table), dtype=bool)
    for k in KEYS:
        want = _want(k, mark.get(k))
        if want is None or k not in table:
            continue
        if k not in cache:
            cache[k] = _text(table[k], k)
        m &= cache[k] == want
    return m


def rows(table: pd.DataFrame, mark: dict) -> pd.DataFrame:
    """The rows of table that the mark's non-empty KEYS name."""
    return table[mask(table, mark)]


def recompute(t: dict, mark: dict, caches: dict | None = None) -> tuple[float | None, str]:
    """The value the mark's quantity and agg give from the tables t (load); None with the
    reason where the table or column is missing (caches: per table, mask's)."""
    table, _, expr = str(mark["quantity"]).partition(".")
    df = t.get(table)
    if df is None:
        return None, f"no tables/{table}.csv"
    num, _, den = expr.partition("/")
    how = mark.get("agg") if isinstance(mark.get("agg"), str) and mark.get("agg") else "one"
    agg = AGGREGATES.get(how)
    if agg is None:
        return None, f"agg {mark.get('agg')!r} is not one of {', '.join(AGGREGATES)}"
    for c in filter(None, (num, den)):
        if c not in df:
            return None, f"no column {c} in tables/{table}.csv"
    m = mask(df, mark, None if caches is None else caches.setdefault(table, {}))
    if how in ("count", "nunique", "trues"):
        return agg(df[num][m]), ""
    value = agg(pd.to_numeric(df[num][m], errors="coerce").dropna())
    if den:
        value = value / agg(pd.to_numeric(df[den][m], errors="coerce").dropna())
    return value, f"{int(m.sum())} row(s)"


def _close(a, b) -> bool:
    return audit_match.close(float(a), float(b))


def _name(m: dict) -> str:
    def text(v):
        return f"{v:g}" if isinstance(v, float) else str(v)
    return " ".join(text(m[k]) for k in KEYS if k in m and m[k] == m[k] and m[k] not in (None, ""))


def own_marks(marks: pd.DataFrame) -> pd.DataFrame:
    """A figure's marks as a table a mark may name ("marks.<quantity>"): a row per mark,
    its keys and a column per quantity holding its value (a total written on a figure drawn
    from no table, such as a timeline's busy time, is the sum of the boxes drawn)."""
    if "quantity" not in marks or "value" not in marks:
        return pd.DataFrame()
    q = marks["quantity"].astype(str)
    cols = {name: marks["value"].where(q == name) for name in q.unique() if not name.startswith("marks.")}
    return marks[[k for k in KEYS if k in marks]].assign(**cols)


def check_marks(a, marks: pd.DataFrame, t: dict, caption: str | None, where: str, caches: dict | None = None) -> None:
    """Each mark of one figure's data against the tables t (and the figure's own marks,
    own_marks), its label and the caption."""
    if marks["quantity"].astype(str).str.startswith("marks.").any():
        t = {**t, "marks": own_marks(marks)}
        caches = {k: v for k, v in (caches or {}).items() if k != "marks"}
    for m in marks.to_dict("records"):
        q, label = m.get("quantity"), f"{where} {m.get('mark')} {_name(m)}".strip()
        value, text, fmt = m.get("value"), m.get("text"), m.get("fmt")
        if isinstance(q, str) and "." in q and value == value and value is not None:
            want, why = recompute(t, m, caches)
            a.check(want is not None and _close(value, want), label,
                    f"draws {q} = {value:.6g}, the record gives " + (f"{want:.6g} ({m['agg'] if isinstance(m.get('agg'), str) else 'one'} of {why})"
                                                                  if want is not None else why))
        if isinstance(text, str) and isinstance(fmt, str) and value == value and value is not None:
            f = FORMATS.get(fmt)
            a.check(f is not None and f(float(value)) in text, label,
                    f"label {text!r} does not say {q} = {value:.6g}"
                    + (f" ({f(float(value))!r})" if f else f" (no format {fmt!r})"))
        if m.get("mark") == "caption" and isinstance(text, str) and caption is not None:
            a.check(text in caption, label, f"the caption does not quote {text!r}")


def check_file(a, data: str, t: dict, results: str, caches: dict | None = None) -> None:
    """One figure's data file (figures/<figure>/<scope>.data.csv under results): written
    where its figure is drawn, each mark against the tables t (load; check_marks)."""
    rel = os.path.relpath(data, results)
    rst = data[:-len(".data.csv")] + ".rst"
    caption = audit_inputs.read_text(a, rst)
    try:
        marks = read_csv(data)
    except pd.errors.EmptyDataError:
        marks = pd.DataFrame()
    except (OSError, ValueError) as e:
        a.check(False, rel, f"cannot be read ({type(e).__name__}: {' '.join(str(e).split())[:200]})")
        return
    if caption is not None:
        drawn = not caption.startswith(NO_DATA)
    else:   # a figure written without a caption (the timeline): drawn where its image is, not a marker
        drawn = os.path.exists(data[:-len(".data.csv")] + ".png") and not (
            "mark" in marks and (marks["mark"] == "no data").any())
    a.check(len(marks) > 0 or not drawn, rel, "the figure is drawn but its data file holds no mark")
    if len(marks):
        check_marks(a, marks, t, caption, rel, caches)


def check(a, results: str) -> None:
    """Every figure's data file in the results folder (figures/*/*.data.csv): check_file."""
    t = load(results)
    caches: dict = {}
    for data in sorted(glob.glob(os.path.join(results, "figures", "*", "*.data.csv"))):
        check_file(a, data, t, results, caches)
