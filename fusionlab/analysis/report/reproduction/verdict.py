"""The rubric: how a measured value becomes a verdict on a published claim.

Five verdicts, and only these:
- holds: the measured interval lies within the claim's band (edges included);
- does not hold: the interval lies entirely outside the band;
- inconclusive: the interval straddles an edge of the band;
- not tested: what was measured is not the claim's configuration, mode or quantity (a
  proxy), it was too noisy to judge, or it was not measured; a proxy's value is shown,
  never judged;
- not measurable on this device: a GPU claim on a CPU run.

The interval is what it says (interval.Interval: a t-interval over processes with its
level, or "range of n"); one process gives none and its point stands for the interval.
The same rule judges ratios, bounds, orderings and scaling exponents. A compound claim
holds only if every part holds, does not hold if any part does not, and is otherwise
inconclusive (a part inconclusive) or not tested. Each function returns (verdict,
reason), the reason computed from the numbers the verdict used.
"""
from __future__ import annotations

import math

from fusionlab.analysis.report.reproduction.interval import Interval

HOLDS = "holds"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"
NOT_ON_DEVICE = "not measurable on this device"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NOT_TESTED, NOT_ON_DEVICE)
ONE = "one process: no interval"


def _num(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def judge(lo: float, hi: float, a: float, b: float) -> str:
    """The rubric itself: [lo, hi] within [a, b] holds, wholly outside does not hold,
    across an edge is inconclusive."""
    if a <= lo and hi <= b:
        return HOLDS
    if hi < a or lo > b:
        return FAILS
    return INCONCLUSIVE


def _bounds(m: float, ci: Interval | None) -> tuple[float, float]:
    return (ci.lo, ci.hi) if ci is not None else (m, m)


def _ci(ci: Interval | None) -> str:
    return f" {ci.text()}" if ci is not None else f" ({ONE})"


WORDS = {HOLDS: "lies within", FAILS: "lies outside", INCONCLUSIVE: "straddles an edge of"}


def within(measured, a: float, b: float, ci: Interval | None = None, what: str = "", unit: str = "x",
           band_text: str | None = None) -> tuple[str, str]:
    """A measured value (and its interval) against the band [a, b]."""
    m = _num(measured)
    if m is None:
        return NOT_TESTED, f"no measured value{what}"
    v = judge(*_bounds(m, ci), a, b)
    band = band_text or f"{a:.3g}-{b:.3g}{unit}"
    return v, f"{m:.3g}{unit}{_ci(ci)}{what} {WORDS[v]} {band}"


def ratio(measured, published: float | None, tolerance: float, ci: Interval | None = None,
          band: tuple | None = None, what: str = "") -> tuple[str, str]:
    """A speedup-like ratio against [published / tolerance, published x tolerance], or
    against `band` (the text's own range, e.g. 2-3x)."""
    m = _num(measured)
    if m is None or m <= 0:
        return NOT_TESTED, "no measured ratio"
    if band:
        a, b = float(band[0]), float(band[1])
        text = f"{a:.3g}-{b:.3g}x (the text's range)"
    else:
        a, b = published / tolerance, published * tolerance
        text = f"{a:.3g}-{b:.3g}x ({published:.3g}x within {tolerance:g}x)"
    v, why = within(m, a, b, ci, what, band_text=text)
    if v == FAILS and published:
        why += f": {published / m:.3g}x off"
    return v, why


def at_most(measured, bound: float, ci: Interval | None = None, what: str = "") -> tuple[str, str]:
    """A value at most `bound` ("gains little or loses")."""
    return within(measured, 0.0, bound, ci, what, band_text=f"at most {bound:g}x")


def at_least(measured, bound: float, ci: Interval | None = None, what: str = "") -> tuple[str, str]:
    """A value at least `bound` ("faster")."""
    return within(measured, bound, math.inf, ci, what, band_text=f"at least {bound:g}x")


def greater(small, large, what_small: str, what_large: str, ci_small: Interval | None = None,
            ci_large: Interval | None = None) -> tuple[str, str]:
    """"More at the larger configuration": holds when the larger one's interval lies above
    the smaller one's, does not hold when it lies at or below it, else inconclusive."""
    s, g = _num(small), _num(large)
    if s is None or g is None:
        return NOT_TESTED, f"{what_small if s is None else what_large} not measured"
    (slo, shi), (glo, ghi) = _bounds(s, ci_small), _bounds(g, ci_large)
    v = HOLDS if glo > shi else FAILS if ghi <= slo else INCONCLUSIVE
    word = {HOLDS: "lies above", FAILS: "lies at or below", INCONCLUSIVE: "overlaps"}[v]
    return v, f"{g:.3g}x{_ci(ci_large)} {what_large} {word} {s:.3g}x{_ci(ci_small)} {what_small}"


def count(measured: dict, published: dict, tolerance: float = 1.0) -> tuple[str, str]:
    """Kernels (or operators) per iteration of a reference and a variant (first and second
    keys of published): holds when each is within the factor `tolerance` of the published
    count (counts are exact: no interval)."""
    ref, var = list(published)
    a, b = _num(measured.get(ref)), _num(measured.get(var))
    if a is None or b is None:
        return NOT_TESTED, "no kernel count"
    ok = all(p / tolerance - 1e-9 <= m <= p * tolerance + 1e-9 for m, p in ((a, published[ref]), (b, published[var])))
    text = f"{a:g} -> {b:g} per iteration against the published {published[ref]:g} -> {published[var]:g}"
    if ok:
        return HOLDS, text
    fewer = " (the variant runs fewer, as published)" if b < a and published[var] < published[ref] else ""
    return FAILS, text + fewer


def kendall_tau(order_a: list, order_b: list) -> float:
    """Kendall's tau between two orderings of the same items (1: same order, -1: reversed)."""
    items = [x for x in order_a if x in order_b]
    pos = {x: i for i, x in enumerate(order_b)}
    n, s = len(items), 0
    for i in range(n):
        for j in range(i + 1, n):
            s += 1 if pos[items[i]] < pos[items[j]] else -1
    pairs = n * (n - 1) / 2
    return s / pairs if pairs else float("nan")


def ordering(measured: dict, published_ms: dict, equal: list | None = None,
             equal_tolerance: float = 1.05) -> tuple[str, str]:
    """Fastest-to-slowest order: measured {name: (ms, Interval | None)}. Each published
    pair the text orders (x faster than y): holds when x's interval lies below y's, does
    not hold when it lies above, else inconclusive. Each pair the text calls equal
    (`equal`): their ratio within equal_tolerance either way, by the same rubric."""
    ms = {k: v for k, v in measured.items() if k in published_ms and _num(v[0]) is not None}
    if len(ms) < 2:
        return NOT_TESTED, "fewer than two of the implementations measured"
    ties = {frozenset(p) for p in (equal or [])}
    pub = sorted(ms, key=lambda k: published_ms[k])
    parts = []
    for i, x in enumerate(pub):
        for y in pub[i + 1:]:
            (tx, cx), (ty, cy) = ms[x], ms[y]
            (xlo, xhi), (ylo, yhi) = _bounds(tx, cx), _bounds(ty, cy)
            if frozenset((x, y)) in ties:
                r = tx / ty
                ci = Interval(xlo / yhi, xhi / ylo, "from the two times' intervals") if cx or cy else None
                v, why = within(r, 1 / equal_tolerance, equal_tolerance, ci, f" ({x} / {y})",
                                band_text=f"equal within {equal_tolerance:g}x")
                parts.append((f"{x} = {y}", v, why))
                continue
            v = HOLDS if xhi < ylo else FAILS if xlo > yhi else INCONCLUSIVE
            word = {HOLDS: "faster than", FAILS: "slower than", INCONCLUSIVE: "not separable from"}[v]
            parts.append((f"{x} < {y}", v, f"{x} {tx:.3g} ms{_ci(cx)} {word} {y} {ty:.3g} ms{_ci(cy)}"))
    mea = sorted(ms, key=lambda k: ms[k][0])
    v, _ = compound(parts)
    text = f"measured {' < '.join(mea)} (Kendall tau {kendall_tau(mea, pub):+.2f} against the published order)"
    off = [f"{name}: {pv} ({why})" for name, pv, why in parts if pv != HOLDS]
    return v, text + ("; " + "; ".join(off) if off else "; every pair as published")


def launch(launch_us, kernel_us, short_share, bound: float = 0.5) -> tuple[str, str]:
    """Launch-bound kernels: holds when the median launch call lasts longer than the median
    kernel and a share >= bound of kernels is shorter than its own launch call."""
    lu, ku, sh = _num(launch_us), _num(kernel_us), _num(short_share)
    if lu is None or ku is None or ku <= 0:
        return NOT_TESTED, "no launch or kernel durations (needs an nsys trace of a GPU run)"
    r = lu / ku
    text = (f"launch call {lu:.3g} us / kernel {ku:.3g} us = {r:.2g}x"
            + (f"; {sh:.0%} of kernels shorter than their launch (at least {bound:.0%} needed)" if sh is not None else ""))
    return (HOLDS if r > 1 and sh is not None and sh >= bound else FAILS), text


def traffic(measured_bytes, published_bytes, tolerance: float, what: str = "measured") -> tuple[str, str]:
    """Bytes of one iteration against the text's formula: within the factor `tolerance`
    (Nsight Compute's counters are exact: no interval)."""
    m, p = _num(measured_bytes), _num(published_bytes)
    if m is None or not p:
        return NOT_TESTED, f"no {what} bytes"
    f = max(m / p, p / m) if m > 0 else float("inf")
    text = f"{what} {m:.4g} B against the formula's {p:.4g} B ({m / p:.3g}x; within {tolerance:g}x needed)"
    return (HOLDS if f <= tolerance else FAILS), text


def linear_fit(x: list, y: list) -> tuple[float, float, float]:
    """Least-squares y = a + b x: (a, b, R^2)."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((xi - mx) ** 2 for xi in x)
    b = sum((xi - mx) * (yi - my) for xi, yi in zip(x, y)) / sxx if sxx else float("nan")
    a = my - b * mx
    ss = sum((yi - my) ** 2 for yi in y)
    res = sum((yi - a - b * xi) ** 2 for xi, yi in zip(x, y))
    return a, b, (1 - res / ss) if ss else float("nan")


def loglog_slope(x: list, y: list) -> float:
    """The least-squares slope of log y against log x over every point: 1 for a time
    proportional to x, k for x^k; nan with fewer than two distinct x or a value <= 0."""
    if len(x) < 2 or any(v <= 0 for v in list(x) + list(y)):
        return float("nan")
    return linear_fit([math.log(v) for v in x], [math.log(v) for v in y])[1]


def scaling(x: list, y: list, exponent: float, tolerance: float, ci: Interval | None = None,
            axis: str = "layers") -> tuple[str, str]:
    """Time as a power of x: the log-log slope over every point (y: the processes'
    geometric means) and its interval over processes, against exponent +- tolerance."""
    pts = sorted((float(a), float(b)) for a, b in zip(x, y) if _num(a) is not None and _num(b) is not None)
    if len(pts) < 3:
        return NOT_TESTED, f"{len(pts)} values of {axis} measured (at least 3 needed)"
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    k = loglog_slope(xs, ys)
    if k != k:
        return NOT_TESTED, f"no log-log slope over {axis}"
    _, _, r2 = linear_fit([math.log(v) for v in xs], [math.log(v) for v in ys])
    v, why = within(k, exponent - tolerance, exponent + tolerance, ci, unit="",
                    band_text=f"{exponent:g} +- {tolerance:g}")
    return v, (f"log-log slope over {', '.join(f'{u:g}' for u in xs)} {axis}: " + why
               + f" (R^2 of the log-log line {r2:.3f})")


def compound(parts: list[tuple[str, str, str]]) -> tuple[str, str]:
    """Parts (name, verdict, reason): holds only if every part holds; does not hold if
    any part does not; inconclusive if a part is (and none fails); not measurable where
    every part is; else not tested."""
    verdicts = [v for _, v, _ in parts]
    text = "; ".join(f"{name}: {v} ({why})" for name, v, why in parts)
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS, text
    if FAILS in verdicts:
        return FAILS, text
    if INCONCLUSIVE in verdicts:
        return INCONCLUSIVE, text
    if verdicts and all(v == NOT_ON_DEVICE for v in verdicts):
        return NOT_ON_DEVICE, text
    return NOT_TESTED, text


def over_range(parts: list[tuple[str, str, str]], axis: str) -> tuple[str, str]:
    """A claim the text states without a configuration, swept over a documented range
    (parts: one per point): holds where it holds at some point, and says over which part;
    else inconclusive where a point is, else does not hold."""
    held = [name for name, v, _ in parts if v == HOLDS]
    text = "; ".join(f"{name}: {v} ({why})" for name, v, why in parts)
    if not parts:
        return NOT_TESTED, f"no {axis} measured"
    if held:
        return HOLDS, f"holds at {', '.join(held)} of the {axis} swept ({len(held)} of {len(parts)}); " + text
    verdicts = [v for _, v, _ in parts]
    if INCONCLUSIVE in verdicts:
        return INCONCLUSIVE, text
    if FAILS in verdicts:
        return FAILS, f"holds at none of the {axis} swept; " + text
    return NOT_TESTED, text
