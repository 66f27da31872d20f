"""The rubric: how a measured value becomes a verdict on a published claim.

Four verdicts, and only these:
- holds: the point estimate meets the claim (within the tolerance) and its interval,
  where there is one, meets it too (an interval wholly outside does not hold);
- does not hold: the point estimate is outside; where the direction agrees, the reason
  says so, the verdict does not;
- not tested: what was measured is not the claim's configuration, mode or quantity (a
  proxy), or it was not measured at all; a proxy's value is shown, never judged;
- not measurable on this device: a GPU claim on a CPU run.

A compound claim (several parts) holds only if every part holds; it does not hold if any
part does not; otherwise it is not tested. Each function returns (verdict, reason), the
reason computed from the numbers the verdict used.
"""
from __future__ import annotations

import math

HOLDS = "holds"
FAILS = "does not hold"
NOT_TESTED = "not tested"
NOT_ON_DEVICE = "not measurable on this device"
VERDICTS = (HOLDS, FAILS, NOT_TESTED, NOT_ON_DEVICE)


def _num(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _interval(lo, hi) -> tuple:
    lo, hi = _num(lo), _num(hi)
    return (lo, hi) if lo is not None and hi is not None else (None, None)


def _ci(lo, hi) -> str:
    return f" [{lo:.3g}, {hi:.3g}]" if lo is not None else " (no interval: one process)"


def ratio(measured, published: float, tolerance: float, lo=None, hi=None) -> tuple[str, str]:
    """A speedup-like ratio against [published / tolerance, published x tolerance]: holds
    when the point is inside and its interval [lo, hi] meets the band."""
    m = _num(measured)
    if m is None or m <= 0:
        return NOT_TESTED, "no measured ratio"
    lo, hi = _interval(lo, hi)
    a, b = published / tolerance, published * tolerance
    band = f"{a:.3g}-{b:.3g}x ({published:.3g}x within {tolerance:g}x)"
    if a <= m <= b and (lo is None or (hi >= a and lo <= b)):
        edge = "" if lo is None or (a <= lo and hi <= b) else "; its interval reaches past the band"
        return HOLDS, f"{m:.3g}x{_ci(lo, hi)} is inside {band}{edge}"
    if a <= m <= b:
        return FAILS, f"{m:.3g}x is inside {band} but its interval{_ci(lo, hi)} lies outside it"
    side = (("faster" if published > 1 else "slower") + " than the reference, as published" if (m > 1) == (published > 1) and m != 1 and abs(math.log(published)) > math.log(tolerance)
            else "")
    return FAILS, f"{m:.3g}x{_ci(lo, hi)} is outside {band}: {published / m:.3g}x off" + (f"; {side}" if side else "")


def count(measured: dict, published: dict, tolerance: float = 1.0) -> tuple[str, str]:
    """Kernels per iteration of a reference and a variant (first and second keys of
    published): holds when each is within the factor `tolerance` of the published count."""
    ref, var = list(published)
    a, b = _num(measured.get(ref)), _num(measured.get(var))
    if a is None or b is None:
        return NOT_TESTED, "no kernel count"
    ok = all(p / tolerance - 1e-9 <= m <= p * tolerance + 1e-9 for m, p in ((a, published[ref]), (b, published[var])))
    text = f"{a:g} -> {b:g} kernels per iteration against the published {published[ref]:g} -> {published[var]:g}"
    if ok:
        return HOLDS, text
    fewer = " (the variant launches fewer, as published)" if (b < a) == (published[var] < published[ref]) else ""
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


def ordering(measured_ms: dict, published_ms: dict, spread: dict | None = None) -> tuple[str, str]:
    """Fastest-to-slowest order of the implementations measured (at least two): holds when
    no published pair is swapped beyond the runs' spread (two times within each other's
    spread, measured_ms[x] x (1 +- spread[x]), count as tied)."""
    both = [k for k in published_ms if _num(measured_ms.get(k)) is not None]
    if len(both) < 2:
        return NOT_TESTED, "fewer than two of the implementations measured"
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
    return FAILS, text + "; swapped beyond the timing spread: " + ", ".join(
        f"{x} {measured_ms[x]:.3g} ms after {y} {measured_ms[y]:.3g} ms" for x, y in inverted)


def at_most(measured, bound: float, lo=None, hi=None, what: str = "") -> tuple[str, str]:
    """A value at most `bound` ("gains little or loses"): holds when the point is at most
    the bound and its interval reaches it."""
    m = _num(measured)
    if m is None:
        return NOT_TESTED, f"no measured value{what}"
    lo, hi = _interval(lo, hi)
    if m <= bound and (lo is None or lo <= bound):
        return HOLDS, f"{m:.3g}x{_ci(lo, hi)}{what} is at most {bound:g}x"
    return FAILS, f"{m:.3g}x{_ci(lo, hi)}{what} is above {bound:g}x"


def greater(small, large, what_small: str, what_large: str, lo=None, hi=None) -> tuple[str, str]:
    """"More at the larger configuration": holds when `large` exceeds `small` and the
    interval of `large` reaches above `small`."""
    s, g = _num(small), _num(large)
    if s is None or g is None:
        return NOT_TESTED, f"{what_small if s is None else what_large} not measured"
    lo, hi = _interval(lo, hi)
    if g > s and (hi is None or hi > s):
        return HOLDS, f"{g:.3g}x{_ci(lo, hi)} {what_large} is more than {s:.3g}x {what_small}"
    return FAILS, f"{g:.3g}x{_ci(lo, hi)} {what_large} is not more than {s:.3g}x {what_small}"


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
    """Bytes of one iteration against the text's formula: within the factor `tolerance`."""
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


def scaling(x: list, y: list, min_r2: float, exponent_tol: float, exponents: list | None = None,
            axis: str = "layers") -> tuple[str, str]:
    """Time linear in x: holds when the line t = a + b x fits (R^2 >= min_r2, b > 0) and
    the exponent of its increment is within exponent_tol of 1, and the exponents of the
    separate processes (`exponents`, where measured) reach that band."""
    pts = sorted((float(a), float(b)) for a, b in zip(x, y) if _num(a) is not None and _num(b) is not None)
    if len(pts) < 3:
        return NOT_TESTED, f"{len(pts)} values of {axis} measured (at least 3 needed)"
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    a, b, r2 = linear_fit(xs, ys)
    k = marginal_exponent(xs, ys)
    ks = sorted(e for e in (exponents or []) if _num(e) is not None)
    lo, hi = (ks[0], ks[-1]) if len(ks) >= 2 else (None, None)
    text = (f"t = {a:.3g} + {b:.3g} ms x {axis}, R^2 {r2:.3f} (at least {min_r2:g} needed); exponent of "
            f"the increment {k:.2f}" + (f" [{lo:.2f}, {hi:.2f}] over {len(ks)} processes" if lo is not None else "")
            + f" (1 +- {exponent_tol:g} needed) over {', '.join(f'{v:g}' for v in xs)}")
    band = (1 - exponent_tol, 1 + exponent_tol)
    ok = (b > 0 and r2 >= min_r2 and k == k and band[0] <= k <= band[1]
          and (lo is None or (hi >= band[0] and lo <= band[1])))
    return (HOLDS if ok else FAILS), text


def compound(parts: list[tuple[str, str, str]]) -> tuple[str, str]:
    """Parts (name, verdict, reason): holds only if every part holds; does not hold if
    any part does not; not measurable where every part is; else not tested."""
    verdicts = [v for _, v, _ in parts]
    text = "; ".join(f"{name}: {v} ({why})" for name, v, why in parts)
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS, text
    if FAILS in verdicts:
        return FAILS, text
    if verdicts and all(v == NOT_ON_DEVICE for v in verdicts):
        return NOT_ON_DEVICE, text
    return NOT_TESTED, text
