"""Verdicts: a measured value against a published one, by the kind of comparison.

Each function takes plain numbers and returns (verdict, why). Ratios, counts, orderings
and exponents are compared across hardware; absolute times never are.

- holds: the measured value agrees within the claim's tolerance
- holds in direction only: same side of the neutral value (1x, "fewer", "grows"), not
  within the tolerance
- does not hold: the other side, or no agreement at all
"""
from __future__ import annotations

import math

HOLDS = "holds"
DIRECTION = "holds in direction only"
FAILS = "does not hold"
NOT_ON_DEVICE = "not measured on this device"
NOT_MEASURED = "not measured in this sweep"
VERDICTS = (HOLDS, DIRECTION, FAILS, NOT_ON_DEVICE, NOT_MEASURED)


def _num(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def ratio(measured, published: float, tolerance: float, lo=None, hi=None) -> tuple[str, str]:
    """A speedup-like ratio (reference time / variant time). Agreement: the measured value
    or its CI [lo, hi] meets [published / tolerance, published * tolerance]. A published
    value within the tolerance of 1 is a neutral claim ("about 1x"): no direction."""
    m = _num(measured)
    if m is None or m <= 0:
        return NOT_MEASURED, "no measured ratio"
    lo, hi = _num(lo) or m, _num(hi) or m
    band = (published / tolerance, published * tolerance)
    if hi >= band[0] and lo <= band[1]:
        return HOLDS, f"{m:.3g}x is within {tolerance:g}x of {published:.3g}x"
    if 1 / tolerance <= published <= tolerance:  # neutral claim
        return FAILS, f"{m:.3g}x is outside {band[0]:.3g}-{band[1]:.3g}x: not about {published:.3g}x"
    if (m > 1) == (published > 1) and m != 1:
        side = "faster" if published > 1 else "slower"
        return DIRECTION, f"{m:.3g}x: {side} as published, not {published:.3g}x (within {tolerance:g}x)"
    return FAILS, f"{m:.3g}x is on the other side of 1x from {published:.3g}x"


def count(measured: dict, published: dict, tolerance: float = 1.0) -> tuple[str, str]:
    """Kernels per iteration of a reference and a variant (first and second keys of
    published). Agreement: each count within the factor `tolerance` of the published
    one (1.0: equal); direction: the variant launches fewer than the reference."""
    ref, var = list(published)
    a, b = _num(measured.get(ref)), _num(measured.get(var))
    if a is None or b is None:
        return NOT_MEASURED, "no kernel count"
    ok = all(p / tolerance - 1e-9 <= m <= p * tolerance + 1e-9 for m, p in ((a, published[ref]), (b, published[var])))
    text = f"{a:g} -> {b:g} kernels per iteration (published {published[ref]:g} -> {published[var]:g})"
    if ok:
        return HOLDS, text
    if (b < a) == (published[var] < published[ref]):
        return DIRECTION, text
    return FAILS, text


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


def ordering(measured_ms: dict, published_ms: dict, spread: dict | None = None) -> tuple[str, str]:
    """Fastest-to-slowest order of the implementations measured (at least two). Agreement:
    the same order, where two implementations whose times are within each other's spread
    (measured_ms[x] * (1 +- spread[x])) count as tied; direction: Kendall's tau > 0."""
    both = [k for k in published_ms if _num(measured_ms.get(k)) is not None]
    if len(both) < 2:
        return NOT_MEASURED, "fewer than two of the implementations measured"
    pub = sorted(both, key=lambda k: published_ms[k])
    mea = sorted(both, key=lambda k: measured_ms[k])
    spread = spread or {}

    def tied(x, y):
        sx, sy = spread.get(x, 0.02), spread.get(y, 0.02)
        return measured_ms[x] * (1 + sx) >= measured_ms[y] * (1 - sy) and measured_ms[y] * (1 + sy) >= measured_ms[x] * (1 - sx)

    inverted = [(x, y) for i, x in enumerate(pub) for y in pub[i + 1:]
                if measured_ms[x] > measured_ms[y] and not tied(x, y)]
    tau = kendall_tau(mea, pub)
    text = f"measured {' < '.join(mea)} (Kendall tau {tau:+.2f} against the published order)"
    if not inverted:
        return HOLDS, text
    if tau > 0:
        return DIRECTION, text + "; swapped: " + ", ".join(f"{x}/{y}" for x, y in inverted)
    return FAILS, text


def threshold(small, by_batch: dict, bound: float) -> tuple[str, str]:
    """"Gains little or loses at a small batch": the speedup there at most `bound`;
    direction: above the bound, but below the speedup at the largest batch measured (the
    gain grows with the batch, as the text explains)."""
    s = _num(small)
    if s is None:
        return NOT_MEASURED, "no speedup at the small batch"
    trend = ", ".join(f"{b}: {v:.2f}x" for b, v in sorted(by_batch.items()) if _num(v) is not None)
    if s <= bound:
        return HOLDS, f"{s:.2f}x at the small batch (at most {bound:g}x); by batch {trend}"
    largest = _num(by_batch[max(by_batch)]) if by_batch else None
    if largest is not None and largest > s:
        return DIRECTION, f"{s:.2f}x at the small batch gains more than {bound:g}x, less than at larger batches ({trend})"
    return FAILS, f"{s:.2f}x at the small batch (more than {bound:g}x); by batch {trend}"


def launch(launch_us, kernel_us, short_share, bound: float = 0.5) -> tuple[str, str]:
    """Launch-bound kernels: the median launch call lasts longer than the median kernel
    (ratio > 1) and a share >= bound of kernels is shorter than its own launch call;
    direction: one of the two."""
    lu, ku, sh = _num(launch_us), _num(kernel_us), _num(short_share)
    if lu is None or ku is None or ku <= 0:
        return NOT_MEASURED, "no launch or kernel durations (needs an nsys trace of a GPU run)"
    r = lu / ku
    a, b = r > 1, (sh is not None and sh >= bound)
    text = (f"launch call {lu:.3g} us / kernel {ku:.3g} us = {r:.2g}x"
            + (f"; {sh:.0%} of kernels shorter than their launch" if sh is not None else ""))
    if a and b:
        return HOLDS, text
    if a or b:
        return DIRECTION, text
    return FAILS, text


def traffic(measured_elems, published_elems, tolerance: float) -> tuple[str, str]:
    """Memory accesses (elements) of the cost model against the text's formula: within the
    factor `tolerance`; direction: within its square."""
    m, p = _num(measured_elems), _num(published_elems)
    if m is None or not p:
        return NOT_MEASURED, "no cost-model traffic"
    f = max(m / p, p / m) if m > 0 else float("inf")
    text = f"{m:.4g} against {p:.4g} elements ({m / p:.3g}x the formula)"
    if f <= tolerance:
        return HOLDS, text
    if f <= tolerance ** 2:
        return DIRECTION, text
    return FAILS, text


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


def marginal_exponent(x: list, y: list) -> float:
    """d log(y - a) / d log x of the linear fit's increment over the largest half of x: 1
    for a time a + b x, whatever the fixed part a."""
    a, b, _ = linear_fit(x, y)
    pts = sorted(zip(x, y))[len(x) // 2 - (len(x) % 2 == 0):]
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    a = min(a, 0.9 * min(y0, y1))  # the increment stays positive
    if x0 == x1 or y0 - a <= 0 or y1 - a <= 0:
        return float("nan")
    return math.log((y1 - a) / (y0 - a)) / math.log(x1 / x0)


def scaling(x: list, y: list, min_r2: float) -> tuple[str, str]:
    """Time linear in x (layers): the linear fit's R^2 >= min_r2 and its slope > 0;
    direction: the time grows monotonically with x."""
    pts = sorted((float(a), float(b)) for a, b in zip(x, y) if _num(a) is not None and _num(b) is not None)
    if len(pts) < 3:
        return NOT_MEASURED, f"{len(pts)} sizes measured (at least 3 needed)"
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    a, b, r2 = linear_fit(xs, ys)
    text = (f"t = {a:.3g} + {b:.3g} ms x layers, R^2 {r2:.3f} over {', '.join(f'{v:g}' for v in xs)}")
    if b > 0 and r2 >= min_r2:
        return HOLDS, text
    if all(y1 > y0 for y0, y1 in zip(ys, ys[1:])):
        return DIRECTION, text + " (grows, not on a line)"
    return FAILS, text


def steady(cv, bound: float) -> tuple[str, str]:
    """Time linear in steps: the per-step time of the run's timing windows varies by at
    most `bound` (their coefficient of variation); direction: at most 5 x bound."""
    c = _num(cv)
    if c is None:
        return NOT_MEASURED, "no timing windows"
    text = f"per-step time varies {c:.1%} across the timing windows"
    if c <= bound:
        return HOLDS, text
    if c <= 5 * bound:
        return DIRECTION, text + f" (more than {bound:.0%}: the host's noise)"
    return FAILS, text
