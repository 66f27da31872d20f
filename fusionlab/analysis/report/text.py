"""Text helpers of summary.md (no matplotlib): markdown tables, times in the unit that
fits them, and the one way a speedup is written."""
from __future__ import annotations

import pandas as pd

from fusionlab.analysis.sweep.tables import GROUP


def md_table(df: pd.DataFrame) -> str:
    """df as a markdown table (empty cells for nan)."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join("" if (isinstance(v, float) and v != v) else str(v) for v in row) + " |")
    return "\n".join(lines)


def varying_axes(df: pd.DataFrame) -> list[str]:
    """The configuration keys (sweep.tables.GROUP) besides model, batch and size that take
    more than one value in df: the columns a table needs to tell its rows apart."""
    return [k for k in GROUP if k not in ("model", "batch", "size") and k in df and df[k].nunique(dropna=False) > 1]


def drop_constant(df: pd.DataFrame, keep: list[str]) -> pd.DataFrame:
    """df without the columns that hold one value in every row (those of keep stay)."""
    return df[[c for c in df.columns if c in keep or df[c].astype(str).nunique() > 1]]


def iterations(x) -> str:
    """An iteration count as a plain number: '16,194', '12.5'."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def fmt_time(ms: float) -> str:
    """A time given in ms, in the unit that fits it: '74.8 us', '1.20 ms', '2.5 s'."""
    if ms is None or ms != ms:
        return ""
    a = abs(ms)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{ms / 1e3:.3g} s"
    if a >= 1:
        return f"{ms:.3g} ms"
    return f"{ms * 1e3:.3g} us"


def _scaled(value: float, unit: str) -> str:
    """value per second in the SI prefix that fits it: '3.2 T<unit>', '13.1 G<unit>'."""
    if value is None or value != value:
        return ""
    for prefix, f in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if abs(value) >= f:
            return f"{value / f:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def fmt_rate(bytes_per_s: float) -> str:
    """A bandwidth in the unit that fits it: '3.2 TB/s', '13.1 GB/s', '850 MB/s'."""
    return _scaled(bytes_per_s, "B/s")


def fmt_flops(flops_per_s: float) -> str:
    """A rate of floating-point operations in the unit that fits it: '989 TFLOP/s', '85 GFLOP/s'."""
    return _scaled(flops_per_s, "FLOP/s")


NO_EAGER = "no eager run to compare with"   # a variant that ran ok without an eager time beside or apart


HOST_SKEWED = "host-skewed"   # sweep.headline's host_skewed, as the text says it

# the bandwidth a record's bytes were turned into time with (headline traffic_bandwidth,
# missed_fusions bandwidth_source), as the text says it
MEASURED_BW = "measured copy bandwidth"
ACHIEVED_BW = "eager's achieved bandwidth"
NO_PEAKS = "no device/peaks.json with a measured copy bandwidth in this results folder"


def traffic_bandwidth_words(sources) -> str:
    """What 'memory traffic removed' divides its bytes by, from the records' traffic_bandwidth
    values (sweep.headline, one for the whole sweep): eager's achieved bandwidth where the
    results folder has no measured copy bandwidth, else the measured one."""
    if ACHIEVED_BW in {str(s) for s in sources}:
        return f"{ACHIEVED_BW} (eager's bytes over its kernel time; {NO_PEAKS})"
    return f"the {MEASURED_BW}"


def missed_cost_words(sources) -> str:
    """How a buffer left apart is costed, from the missed-fusion records' bandwidth_source
    values (sweep.ledger): at the measured copy bandwidth, or not at all."""
    if MEASURED_BW in {str(s) for s in sources}:
        return f"the buffer between them written and read back at the {MEASURED_BW}"
    return f"the buffer between them not costed in time ({NO_PEAKS}; the pairs rank by bytes)"


def skewed(r) -> bool:
    """Whether a headline record is host-skewed (its host_skewed read from a table or a frame)."""
    return str(r.get("host_skewed")) == "True"


def speedup(r, estimator: bool = True) -> str:
    """A headline speedup (a row of tables/headline.csv) as the summary writes it
    everywhere: '0.95x paired [0.94, 0.97] range of 3, slower', '1.52x paired (1 repeat)',
    '1.01x paired [0.97, 1.04] 95% CI, inconclusive', '3.23x paired (1 repeat), host-skewed'."""
    s = r.get("speedup")
    if s is None or s != s:
        status = str(r.get("status") or "")
        return NO_EAGER if status == "ok" else status
    est = f" {r['estimator']}" if estimator and r.get("estimator") not in (None, "reference") else ""
    lo = r.get("speedup_lo")
    if lo is not None and lo == lo:
        iv = f" [{lo:.2f}, {r['speedup_hi']:.2f}] {r['interval']}"
        verdict = f", {r['verdict']}" if r.get("verdict") else ""
    else:
        iv = f" ({r['interval']})" if isinstance(r.get("interval"), str) and r.get("interval") else ""
        verdict = ""
    noisy = ", noisy" if r.get("noisy") is True or r.get("noisy") == "True" else ""
    skew = f", {HOST_SKEWED}" if skewed(r) else ""
    return f"{s:.2f}x{est}{iv}{verdict}{noisy}{skew}"


def across(r) -> str:
    """The speedup across processes beside a paired one (a diagnostic), '' where the
    headline is already that one."""
    a = r.get("speedup_across")
    if r.get("estimator") != "paired" or a is None or a != a:
        return ""
    lo = r.get("speedup_across_lo")
    ci = f" [{lo:.2f}, {r['speedup_across_hi']:.2f}]" if lo is not None and lo == lo else ""
    return f"across processes {a:.2f}x{ci}"


def verdict_phrase(r) -> str:
    """What a headline speedup lets a reader say, from its verdict alone (the interval
    decides, never the point estimate): 'beats eager', 'is slower than eager',
    'is inconclusive against eager (its interval holds 1; more repeats would narrow it)',
    'has one repeat (more repeats would give a verdict)'."""
    v = r.get("verdict")
    if v == "faster":
        return "beats eager"
    if v == "slower":
        return "is slower than eager"
    if v == "inconclusive":
        return "is inconclusive against eager (its interval holds 1; more repeats would narrow it)"
    if v == "1 repeat":
        return "has one repeat (more repeats would give a verdict)"
    return "has no speedup"
