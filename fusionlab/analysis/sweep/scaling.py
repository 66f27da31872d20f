"""How time per iteration grows along a swept size: t = a + b * s**k.

- a >= 0: the fixed cost in ms (launches, Python, ...), paid whatever the size;
  b > 0, k: the size-dependent part b * s**k (k ~ 1 for pointwise work on s features,
  ~ 3 for an s x s matmul).
- Fit: the least squares of the log residuals, sum (log t_i - log(a + b s_i^k))^2, so
  every size weighs the same in relative terms. For each k the best (a, b) come from
  the relative-error linear least squares of t = a + b s^k, refined by damped Gauss-Newton
  iterations (a clipped to >= 0; a = 0, b in closed form, where that fits as well or a is
  under 1e-6 of the smallest fitted time);
  k is the best of a grid (40 values, 0.05 to 4) refined by golden-section search.
  Deterministic.
- fixed_size s* = (a / b)**(1 / k): the size where the size-dependent part equals the
  fixed cost; below it the fixed cost dominates (nan when a = 0).
- CI on k: bootstrap over the repeats (resampled within each size, fitted on the per-size
  medians), percentile interval; fixed seed, so tables regenerate identically.
- note: why a fit says less than it seems to: 3 sizes for 3 parameters (an exact fit, no
  CI), k at the edge of its range (the size dependence is not resolved by these sizes), a
  poor fit (rmse_log over 0.1: the times are not a + b * size^k, e.g. not monotone).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.analysis.sweep import tables

K_GRID = np.linspace(0.05, 4.0, 40)
KEYS = ["model", "variant", "mode", "dtype", "backend", "device"]
COLUMNS = KEYS + ["axis", "fixed", "metric", "a_ms", "b", "k", "k_lo", "k_hi", "fixed_size",
                  "rmse_log", "n_sizes", "sizes", "note"]
POOR_FIT = 0.1   # rmse of the log residuals: about 10% off on average
METRIC_NAMES = {"wall_time_per_iter_ms": "wall", "gpu_time_per_iter_ms": "gpu"}
N_BOOT = 1000
SEED = 0
_GOLD = (np.sqrt(5) - 1) / 2


def _solve(x, y, iters: int = 40, snap: bool = False):
    """For x = (s / s_ref)**k and y = log t (shape (..., n)): the a >= 0, b > 0 minimising
    sum (y - log(a + b x))^2, and that sum (shape (...)). Damped Gauss-Newton in (a, log b)."""
    def sse(a, b):
        return ((y - np.log(a[..., None] + b[..., None] * x)) ** 2).sum(-1)

    t = np.exp(y)
    u, v = 1 / t, x / t                       # relative error: sum (1 - a u - b v)^2
    suu, suv, svv = (u * u).sum(-1), (u * v).sum(-1), (v * v).sum(-1)
    su, sv = u.sum(-1), v.sum(-1)
    det = suu * svv - suv * suv
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = np.maximum(np.nan_to_num((svv * su - suv * sv) / det), 0.0)
        b = np.nan_to_num((suu * sv - suv * su) / det)
        b0 = np.exp((y - np.log(x)).mean(-1))    # a = 0: log b = mean(log t - log x)
        a1 = np.exp(y.mean(-1))                  # b ~ 0: a = geometric mean of t
    b = np.where(b > 0, b, 1e-6 * a1)
    starts = [(a, b), (np.zeros_like(b0), b0), (a1, 1e-6 * a1)]
    fs = [sse(a_, b_) for a_, b_ in starts]
    f = np.minimum.reduce(fs)
    a = np.choose(np.argmin(fs, axis=0), [s_[0] for s_ in starts])
    b = np.choose(np.argmin(fs, axis=0), [s_[1] for s_ in starts])
    lam = np.full_like(f, 1e-3)
    for _ in range(iters):
        m = a[..., None] + b[..., None] * x
        r = y - np.log(m)
        ja, jb = -1 / m, -b[..., None] * x / m   # d r / d a, d r / d log b
        haa, hab, hbb = (ja * ja).sum(-1), (ja * jb).sum(-1), (jb * jb).sum(-1)
        ga, gb = (ja * r).sum(-1), (jb * r).sum(-1)
        haa_l, hbb_l = haa * (1 + lam), hbb * (1 + lam)
        d = haa_l * hbb_l - hab * hab
        with np.errstate(divide="ignore", invalid="ignore"):
            da = np.nan_to_num(-(hbb_l * ga - hab * gb) / d)
            dl = np.nan_to_num(-(haa_l * gb - hab * ga) / d)
            edge = (a <= 0) & (a + da < 0)      # at the bound a = 0: a step in b alone
            da, dl = np.where(edge, 0.0, da), np.where(edge, np.nan_to_num(-gb / hbb_l), dl)
        a2, b2 = np.maximum(a + da, 0.0), b * np.exp(np.clip(dl, -5, 5))
        if np.all(np.abs(a2 - a) + np.abs(b2 - b) <= 1e-14 * (a + b)):
            break                                # converged everywhere
        f2 = sse(a2, b2)
        ok = f2 < f
        a, b, f = np.where(ok, a2, a), np.where(ok, b2, b), np.where(ok, f2, f)
        lam = np.where(ok, lam / 3, lam * 4)
    f0 = sse(np.zeros_like(b0), b0)
    zero = f0 <= f
    if snap:                                  # a under 1e-6 of the smallest fitted time: 0
        zero |= a <= 1e-6 * (a + b * x.min(-1))
    return np.where(zero, 0.0, a), np.where(zero, b0, b), np.where(zero, f0, f)


def _fit_batch(s, y, tol: float = 1e-10):
    """Best (a, b, k, sse) for each row of y (log t, shape (B, n)) at sizes s (n,), in the
    units of x = (s / max s)**k and t / exp(mean log t); k to within tol."""
    ls = np.log(s / s.max())
    x = np.exp(K_GRID[:, None] * ls)                     # (K, n)
    f = _solve(x[None], y[:, None, :], iters=20)[2]      # (B, K): only to bracket k
    i = np.argmin(f, axis=1)
    lo = K_GRID[np.maximum(i - 1, 0)]
    hi = K_GRID[np.minimum(i + 1, len(K_GRID) - 1)]

    def at(k):
        return _solve(np.exp(k[:, None] * ls), y)

    c, d = hi - _GOLD * (hi - lo), lo + _GOLD * (hi - lo)
    fc, fd = at(c)[2], at(d)[2]
    while np.max(hi - lo) > tol:
        left = fc < fd                                   # the minimum lies in [lo, d]
        hi, lo = np.where(left, d, hi), np.where(left, lo, c)
        new = np.where(left, hi - _GOLD * (hi - lo), lo + _GOLD * (hi - lo))
        fn = at(new)[2]
        c, d, fc, fd = (np.where(left, new, d), np.where(left, c, new),
                        np.where(left, fn, fd), np.where(left, fc, fn))
    k = np.where(fc < fd, c, d)
    a, b, f = _solve(np.exp(k[:, None] * ls), y, snap=True)
    return a, b, k, f


def _clean(sizes, times):
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    keep = np.isfinite(s) & np.isfinite(t) & (s > 0) & (t > 0)
    return s[keep], t[keep]


def fit(sizes, times) -> dict:
    """t = a + b * s**k fitted to the points (s_i, t_i) (several per size allowed; points
    with non-finite or non-positive values dropped) by least squares of the log residuals:
    {a, b, k, fixed_size, rmse_log, n_sizes}."""
    s, t = _clean(sizes, times)
    n_sizes = len(np.unique(s))
    if n_sizes < 3:
        raise ValueError(f"need 3 or more sizes to fit t = a + b*s^k, got {n_sizes}")
    scale = float(np.exp(np.log(t).mean()))
    a, b, k, f = (float(v[0]) for v in _fit_batch(s, np.log(t / scale)[None]))
    s_ref = s.max()
    with np.errstate(over="ignore", divide="ignore"):
        b_ms = float(np.exp(np.log(b * scale) - k * np.log(s_ref)))
        s_star = float(s_ref * np.exp((np.log(a) - np.log(b)) / k)) if a > 0 else float("nan")
    return {"a": a * scale, "b": b_ms, "k": k, "fixed_size": s_star,
            "rmse_log": float(np.sqrt(f / len(t))), "n_sizes": n_sizes}


def bootstrap_k(sizes, times, n: int = N_BOOT, seed: int = SEED, level: float = 0.95) -> tuple[float, float]:
    """Percentile CI on k: the repeat times resampled with replacement within each size,
    refitted on the per-size medians. (nan, nan) with fewer than 4 sizes or no size with
    2 or more repeats."""
    s, t = _clean(sizes, times)
    us = np.unique(s)
    per = [t[s == v] for v in us]
    if len(us) < 4 or max(len(p) for p in per) < 2:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    med = np.stack([np.median(p[rng.integers(0, len(p), size=(n, len(p)))], axis=1) for p in per], axis=1)
    y = np.log(med)
    k = _fit_batch(us, y - y.mean(1, keepdims=True), tol=1e-6)[2]
    q = (1 - level) / 2
    return float(np.nanquantile(k, q)), float(np.nanquantile(k, 1 - q))


def table(runs: pd.DataFrame, metrics=("wall_time_per_iter_ms", "gpu_time_per_iter_ms")) -> pd.DataFrame:
    """One row per (model, variant, mode, dtype, backend, device), swept axis (the other
    axes held at `fixed`: tables.along_axes) and metric with 3 or more sizes of finite,
    positive times: the fit on the per-size medians of the ok repeats, k's bootstrap CI."""
    rows = []
    if runs.empty:
        return pd.DataFrame(rows, columns=COLUMNS)
    if "status" in runs:
        runs = runs[runs["status"] == "ok"]
    for key, axis, fixed, g in tables.along_axes(runs, KEYS, min_values=3):
        for m in metrics:
            if m not in g:
                continue
            d = g[[axis, m]].astype(float)
            d = d[np.isfinite(d[axis]) & np.isfinite(d[m]) & (d[axis] > 0) & (d[m] > 0)]
            if d[axis].nunique() < 3:
                continue
            med = d.groupby(axis)[m].median()
            r = fit(med.index, med.values)
            lo, hi = bootstrap_k(d[axis], d[m])
            rows.append({**dict(zip(KEYS, key)), "axis": axis, "fixed": fixed,
                         "metric": METRIC_NAMES.get(m, m), "a_ms": r["a"], "b": r["b"], "k": r["k"],
                         "k_lo": lo, "k_hi": hi, "fixed_size": r["fixed_size"], "rmse_log": r["rmse_log"],
                         "n_sizes": r["n_sizes"], "sizes": " ".join(str(int(v)) for v in med.index),
                         "note": fit_note(r)})
    return pd.DataFrame(rows, columns=COLUMNS)


def fit_note(r: dict) -> str:
    """What limits a fit (fit()'s result): '' when nothing does."""
    notes = []
    if r["n_sizes"] <= 3:
        notes.append("exact fit: 3 sizes for 3 parameters, no CI; sweep 4 or more sizes")
    if r["k"] <= K_GRID[0] * 1.01 or r["k"] >= K_GRID[-1] * 0.99:
        notes.append(f"k at the edge of its range ({K_GRID[0]:g}-{K_GRID[-1]:g}): not resolved by these sizes")
    if r["rmse_log"] > POOR_FIT:
        notes.append(f"poor fit (rmse_log {r['rmse_log']:.2f}): the times do not follow a + b * size^k")
    return "; ".join(notes)


def _num(x) -> str:
    return f"{x:.0f}" if abs(x) >= 10 else f"{x:.2g}"


def describe(row) -> str:
    """One sentence for the report: 'compile, wall, along dim (num_layers 4): t = 0.021 ms
    + 3.1e-10 * dim^2.94 (k 95% CI 2.81-3.05); fixed cost dominates below dim 2048.'"""
    ax = row["axis"]
    fixed = str(row["fixed"]).replace("=", " ") if row["fixed"] == row["fixed"] else ""
    text = f"{row['variant']}, {row['metric']}, along {ax}" + (f" ({fixed})" if fixed else "")
    text += f": t = {row['a_ms']:.2g} ms + {row['b']:.2g} * {ax}^{row['k']:.2f}"
    if row["k_lo"] == row["k_lo"] and row["k_hi"] == row["k_hi"]:
        text += f" (k 95% CI {row['k_lo']:.2f}-{row['k_hi']:.2f})"
    if row["fixed_size"] == row["fixed_size"]:
        text += f"; fixed cost dominates below {ax} {_num(row['fixed_size'])}"
    note = row.get("note", "")
    if isinstance(note, str) and note:
        text += f" ({note})"
    return text + "."
