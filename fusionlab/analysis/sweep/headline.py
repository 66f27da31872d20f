"""The headline of a sweep (tables/headline.csv): per configuration (tables.GROUP) and
variant, eager included, the absolute time per iteration split as sweep.shares splits
it, one speedup estimator with its interval, and what the speedup comes from.

- speedup: the paired speedup where the variant was paired (eager timed in the
  variant's own process: the host's speed between processes cancels), else the speedup
  across processes; `estimator` says which ("paired", "across processes"; eager:
  "reference"). speedup_across (with its 95% bootstrap CI) is kept beside it as a
  diagnostic, never as the headline.
- speedup_lo, speedup_hi, interval: for a paired speedup, a 95% Student t interval over
  its processes (process_interval): on the log of each process's paired speedup, with
  the between-process spread the larger of the configuration's own and the one pooled
  over every paired configuration of the sweep with two or more processes (a process's
  windows tell nothing of how far the next process lands: its host, its allocator, its
  compile), so a configuration of 1 or 2 processes gets an interval as wide as the
  sweep's processes disagree; `interval` names it ("95% t over 2 processes, spread
  pooled over 14 configurations"). With no configuration of two processes, 1 repeat has
  none ("1 repeat"). Across processes: the 95% bootstrap CI from CI_MIN repeats on, the
  range of the repeats' values below ("range of 3"), none from 1.
- verdict: faster / slower where the interval lies above / below 1, inconclusive where
  it holds 1, and "1 repeat" without an interval.
- host_skewed (host_skew): a paired speedup timed while the host ran slow (the variant's
  runs' median host_slowdown over tables.HOST_SLOW) with one side host-bound and the other
  not: the slow host stretched one side only, so the pairing does not cancel it and the
  speedup is off by up to that factor (over-stated where eager is the host-bound side).
- wall_ms, kernel_ms, host_ms, kernel_wait_ms, other_ms and their shares, bound: the
  split of the configuration's medians (sweep.shares); traced_wall_ms,
  traced_busy_share and traced_bound (metrics' `bound` over the traced iterations) kept as
  diagnostics.
- eager_wall_ms: the eager time the variant is compared with, the one its speedup uses
  (reference says which): eager timed beside the variant in its own process for a paired
  speedup (the variant's wall time x the paired speedup), else eager's own median across
  its processes. eager_own_ms: eager's own-process median, a diagnostic beside it. So
  eager_wall_ms / wall_ms = speedup on every row. A paired variant whose configuration
  has no eager run of its own (a sweep stopped part-way) keeps its speedup, eager_wall_ms
  and saved_ms (reference BESIDE_ONLY) and leaves the parts empty.
- saved_ms = eager_wall_ms - wall_ms, split into parts that add up to it exactly, each
  with its source: host_saved_ms (exposed host time, eager's own processes against the
  variant's: traced host wait less the profiler's cost), traffic_ms (memory traffic
  removed: bytes removed / the measured copy bandwidth; the bytes from Nsight Compute's
  DRAM bytes where both sides have them, else the cost model's, capped there at the
  kernel time saved since the model cannot tell which variant fuses; traffic_source
  names it: measured, modelled or none), kernels_saved_ms (the rest of the kernel time
  saved), host_speed_ms (paired only: eager beside the variant minus eager in its own
  processes, the host-speed difference between the processes) and remainder_ms (kernel
  wait and other idle). Signed: negative where the variant adds time. traffic_bytes and
  traffic_bytes_model are the bytes removed used and the model's (measured: with their range,
  traffic_bytes_low/_high and traffic_ms_low/_high, traffic_spread); traffic_note says where
  they disagree by more than 25%. largest_part / largest_part_ms: the largest part of the
  total's sign, only where it is no larger than the total (else empty: the parts pull
  both ways).
- host_bound, kernel_speedup: host_bound where exposed host time is over HOST_BOUND_SHARE
  of the wall time on either side (eager's or the variant's): the wall-time speedup is
  then the host's (its Python, dispatcher and launch path), and kernel_speedup = eager's
  kernel time per iteration / the variant's (the GPU side, from the traces) is given
  beside it; kernel_speedup is kept on every row with both kernel times.
- compile_s (compilation_latency_s) and break_even_iters = compile_s / time saved per
  iteration, only where the verdict is faster (its interval lies above 1; nan otherwise).
- bandwidth_frac, flops_frac (medians of runs), bandwidth_frac_measured (the same with
  Nsight Compute's DRAM bytes in place of the model's: sweep.traffic's
  copy_bandwidth_frac_measured; empty without them) and ceiling_note: a value above a measured ceiling
  with its reason, from the measured bytes where there are some.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.analysis.sweep import shares, tables
from fusionlab.core import sizes
from fusionlab.core.ratios import t95

CI_MIN = 5          # repeats for a bootstrap CI to mean more than the repeats' range
L2_BYTES = 64e6     # about the L2 cache of current data-centre GPUs (their datasheets: 50-60 MB)
HOST_BOUND_SHARE = 0.5   # exposed host time over this share of the wall time: host-bound
COLUMNS = (list(tables.GROUP) + ["variant", "status", "repeats", "estimator", "speedup", "speedup_lo", "speedup_hi",
                                 "interval", "verdict", "host_bound", "kernel_speedup", "speedup_across", "speedup_across_lo", "speedup_across_hi",
                                 "host_moved", "noisy", "host_skewed"]
           + list(shares.PARTS) + ["wall_ms"] + list(shares.SHARES.values())
           + ["bound", "host_per_launch_us", "launches_per_iter", "kernels_per_iter", "eager_wall_ms",
              "reference", "eager_own_ms", "saved_ms", "host_saved_ms", "traffic_ms", "kernels_saved_ms",
              "host_speed_ms", "remainder_ms", "largest_part", "largest_part_ms", "traffic_source",
              "traffic_bytes", "traffic_bytes_low", "traffic_bytes_high", "traffic_ms_low", "traffic_ms_high",
              "traffic_bytes_model", "traffic_note", "traffic_bandwidth",
              "compile_s", "break_even_iters", "bandwidth_frac", "bandwidth_frac_measured", "flops_frac",
              "ceiling_note",
              "traced_wall_ms", "traced_busy_share", "traced_bound", "traced_launch_overhead_ratio"])


def interval(values, lo, hi) -> tuple[float, float, str]:
    """(lo, hi, name) of an estimator over its repeats' values (module doc)."""
    x = pd.Series(values, dtype=float).dropna()
    if len(x) >= CI_MIN and pd.notna(lo):
        return float(lo), float(hi), "95% CI"
    if len(x) >= 2:
        return float(x.min()), float(x.max()), f"range of {len(x)}"
    return np.nan, np.nan, "1 repeat" if len(x) == 1 else ""


# the paired interval in words (story, summary, captions): process_interval's
PAIRED_INTERVAL = ("a 95% t interval over its processes, the between-process spread pooled over the sweep's "
                   "paired configurations; across processes a 95% bootstrap CI from 5 repeats, else their range")


def pooled_spread(groups) -> tuple[float, int, int]:
    """(sd, degrees of freedom, configurations) of log paired speedup between processes,
    pooled over the groups (one sequence of per-process paired speedups each) with two
    or more values; (nan, 0, 0) where none has."""
    ss, df, k = 0.0, 0, 0
    for values in groups:
        x = np.log(pd.Series(values, dtype=float).dropna().loc[lambda v: v > 0])
        if len(x) >= 2:
            ss += float(((x - x.mean()) ** 2).sum())
            df += len(x) - 1
            k += 1
    return (float(np.sqrt(ss / df)) if df else np.nan), df, k


def process_interval(values, pooled: tuple[float, int, int]) -> tuple[float, float, str]:
    """(lo, hi, name): the 95% t interval over processes of a paired speedup (module doc)."""
    x = np.log(pd.Series(values, dtype=float).dropna().loc[lambda v: v > 0])
    n = len(x)
    own = float(x.std(ddof=1)) if n >= 2 else np.nan
    sd_pool, df_pool, k = pooled
    if n == 0 or (n == 1 and not df_pool):
        return np.nan, np.nan, "1 repeat" if n == 1 else ""
    # the pooled spread and its degrees of freedom where other configurations add to it
    # (the larger of it and the configuration's own), else the configuration's own
    use_pool = bool(df_pool) and (np.isnan(own) or k >= 2)
    sd, df = (max(sd_pool, own if not np.isnan(own) else 0.0), df_pool) if use_pool else (own, n - 1)
    half = t95(df) * sd / np.sqrt(n)
    m = float(x.mean())
    name = f"95% t over {n} process{'es' if n > 1 else ''}" + (
        f", spread pooled over {k} configuration{'s' if k > 1 else ''}" if use_pool else "")
    return float(np.exp(m - half)), float(np.exp(m + half)), name


def verdict(s, lo, hi) -> str:
    if pd.isna(s):
        return ""
    if pd.isna(lo):
        return "1 repeat"
    return "faster" if lo > 1 else "slower" if hi < 1 else "inconclusive"


def _median(g: pd.DataFrame, col: str) -> float:
    x = pd.to_numeric(g[col], errors="coerce").dropna() if col in g else pd.Series(dtype=float)
    return float(x.median()) if len(x) else np.nan


def _side(g: pd.DataFrame) -> dict:
    """The configuration's medians, split (sweep.shares)."""
    q = shares.inputs(g).median(numeric_only=True).to_frame().T
    q["cpu"] = bool(shares.inputs(g)["cpu"].all())
    s = shares.split(q).iloc[0].to_dict()
    s["bytes_saved"] = _median(g, "bytes_unfused") - _median(g, "bytes_fused")
    s["bytes_fused"] = _median(g, "bytes_fused")
    s["dram_bytes_measured"] = _median(g, "dram_bytes_measured")
    return s


def _speedup(sp: pd.Series, v: pd.DataFrame, e: pd.DataFrame, pooled=(np.nan, 0, 0)) -> dict:
    """The headline speedup of one variant configuration (module doc)."""
    paired = v["paired_speedup"].dropna() if "paired_speedup" in v else pd.Series(dtype=float)
    ac = sp.get("speedup_wall", np.nan)
    across = {"speedup_across": ac, "speedup_across_lo": sp.get("speedup_wall_lo", np.nan),
              "speedup_across_hi": sp.get("speedup_wall_hi", np.nan)}
    if len(paired):
        s = sp.get("speedup_paired", paired.median())
        lo, hi, name = process_interval(paired, pooled)
        est = "paired"
    else:
        s, est = ac, "across processes"
        ew, vw = e["wall_time_per_iter_ms"].dropna(), v["wall_time_per_iter_ms"].dropna()
        n = min(len(ew), len(vw))
        if n >= CI_MIN and pd.notna(across["speedup_across_lo"]):
            lo, hi, name = across["speedup_across_lo"], across["speedup_across_hi"], "95% CI"
        elif n >= 2:
            lo, hi, name = ew.min() / vw.max(), ew.max() / vw.min(), f"range of {n}"
        else:
            lo, hi, name = np.nan, np.nan, "1 repeat" if n == 1 else ""
    return {"estimator": est, "speedup": s, "speedup_lo": lo, "speedup_hi": hi, "interval": name,
            "verdict": verdict(s, lo, hi), **across}


PARTS = ("host_saved_ms", "traffic_ms", "kernels_saved_ms", "host_speed_ms", "remainder_ms")
TRAFFIC_DISAGREE = 0.25   # measured and modelled bytes removed further apart than this: said so


def _z(x) -> float:
    return x if pd.notna(x) else 0.0


def _traffic(e: dict, v: dict, gpu: float, bw: float | None) -> dict:
    """The memory-traffic part (module doc): its time, bytes, source and note."""
    measured = e["dram_bytes_measured"] - v["dram_bytes_measured"]
    model = e["bytes_saved"]
    out = {"traffic_bytes_model": model, "traffic_note": ""}
    if bw:
        bandwidth = "measured copy bandwidth"
    elif pd.notna(e["kernel_ms"]) and e["kernel_ms"] > 0 and pd.notna(e["bytes_fused"]):
        bw, bandwidth = (e["bytes_saved"] + e["bytes_fused"]) / (e["kernel_ms"] / 1e3), "eager's achieved bandwidth"
    else:
        bandwidth = "none"
    if pd.notna(measured) and bw:
        out.update(traffic_ms=measured / bw * 1e3, traffic_bytes=measured, traffic_source="measured")
        if pd.notna(model) and abs(measured - model) > TRAFFIC_DISAGREE * max(abs(model), abs(measured)):
            out["traffic_note"] = (f"Nsight Compute measured {measured / 1e6:.3g} MB removed, the cost model "
                                   f"counts {model / 1e6:.3g} MB: they differ by more than "
                                   f"{TRAFFIC_DISAGREE:.0%}; the measured bytes are used")
    elif pd.notna(model) and bw and pd.notna(gpu):
        out.update(traffic_ms=min(max(model / bw * 1e3, 0.0), max(gpu, 0.0)), traffic_bytes=model,
                   traffic_source="modelled")
    else:
        out.update(traffic_ms=0.0, traffic_bytes=np.nan, traffic_source="none")
        bandwidth = "none"
    out["traffic_bandwidth"] = bandwidth
    return out


def traffic_spread(sp: dict, row: dict) -> dict:
    """The measured bytes removed as a range (sweep.traffic: eager's lowest steady iteration
    against the variant's highest and back, and near or below L2 the cold bytes too), and
    the time that range takes at the bandwidth the traffic part used; the note names the
    range where the working set is near or below L2 (which bytes stay there depends on
    what ran before)."""
    lo, hi = sp.get("bytes_removed_low", np.nan), sp.get("bytes_removed_high", np.nan)
    if row.get("traffic_source") != "measured" or not (pd.notna(lo) and pd.notna(hi)):
        return {"traffic_bytes_low": np.nan, "traffic_bytes_high": np.nan}
    per_byte = row["traffic_ms"] / row["traffic_bytes"] if row["traffic_bytes"] else np.nan
    out = {"traffic_bytes_low": lo, "traffic_bytes_high": hi,
           "traffic_ms_low": lo * per_byte, "traffic_ms_high": hi * per_byte}
    if sp.get("bytes_regime") == "near or below L2":
        note = (f"the working set is near or below L2: the DRAM bytes removed lie between {lo / 1e6:.3g} and "
                f"{hi / 1e6:.3g} MB (cold and steady-state iterations), {row['traffic_bytes'] / 1e6:.3g} MB "
                "being the steady median")
        out["traffic_note"] = "; ".join(x for x in (row.get("traffic_note"), note) if x)
    return out


def largest(parts: dict, total: float) -> tuple[str, float]:
    """The part of total's sign with the largest magnitude, where it is no larger than
    the total; ("", nan) otherwise (the parts pull both ways, or nothing was saved)."""
    if pd.isna(total) or total == 0:
        return "", np.nan
    same = {k: p for k, p in parts.items() if pd.notna(p) and p * total > 0}
    if not same:
        return "", np.nan
    k = max(same, key=lambda p: abs(same[p]))
    return (k, same[k]) if abs(same[k]) <= abs(total) * (1 + 1e-9) else ("", np.nan)


def _parts(e: dict, v: dict, speedup: float, estimator: str, bw: float | None) -> dict:
    """The reference eager time and the parts of the time saved, adding up to it (module doc)."""
    own = e["wall_ms"]
    paired = estimator == "paired" and pd.notna(speedup) and pd.notna(v["wall_ms"])
    ref = v["wall_ms"] * speedup if paired else own
    gpu = e["kernel_ms"] - v["kernel_ms"]
    er = own - e["kernel_ms"] - _z(e["host_ms"])
    vr = v["wall_ms"] - v["kernel_ms"] - _z(v["host_ms"])
    out = {"eager_wall_ms": ref, "eager_own_ms": own, "saved_ms": ref - v["wall_ms"],
           "reference": "eager timed beside it" if paired else "eager in its own processes",
           "host_saved_ms": _z(e["host_ms"]) - _z(v["host_ms"]),
           "host_speed_ms": ref - own, "remainder_ms": er - vr}
    out.update(_traffic(e, v, gpu, bw))
    out["kernels_saved_ms"] = gpu - out["traffic_ms"]
    out["largest_part"], out["largest_part_ms"] = largest({k: out[k] for k in PARTS}, out["saved_ms"])
    return out


def ceiling_note(bandwidth_frac: float, flops_frac: float, bytes_fused: float, measured_frac: float = np.nan,
                 device: str = "cuda") -> str:
    """Why a run configuration lies above a measured ceiling ('' where it does not); with
    measured DRAM bytes (measured_frac) the reason is read from them, not guessed."""
    notes = []
    if pd.notna(measured_frac) and measured_frac > 1:
        notes.append(f"{measured_frac:.2f}x the measured copy bandwidth in Nsight Compute's DRAM bytes: the "
                     "kernels move DRAM data faster than the copy benchmark, whose rate is below the DRAM peak")
    elif pd.notna(measured_frac) and pd.notna(bandwidth_frac) and bandwidth_frac > 1:
        notes.append(f"{bandwidth_frac:.2f}x the measured copy bandwidth by the model's bytes, {measured_frac:.2f}x "
                     "by Nsight Compute's DRAM bytes: the model counts traffic that stays in L2")
    elif pd.notna(bandwidth_frac) and bandwidth_frac > 1 and device == "cpu":
        notes.append(f"{bandwidth_frac:.2f}x the measured copy bandwidth: the cost model counts bytes that stay "
                     "in the CPU's caches between operators")
    elif pd.notna(bandwidth_frac) and bandwidth_frac > 1:
        why = (f"its {bytes_fused / 1e6:.3g} MB per iteration fit in L2, so the data stay resident between "
               "kernels and iterations" if pd.notna(bytes_fused) and bytes_fused <= L2_BYTES
               else "the cost model counts more bytes than the kernels move (reuse in L2 or registers)")
        notes.append(f"{bandwidth_frac:.2f}x the measured copy bandwidth: {why}")
    if pd.notna(flops_frac) and flops_frac > 1:
        notes.append(f"{flops_frac:.2f}x the measured matmul rate: the " + ("operators" if device == "cpu" else
                     "kernels") + " take a faster path than the measured matmul (another precision such as TF32, "
                     "or another kernel)")
    return "; ".join(notes)


def table(runs: pd.DataFrame, sp: pd.DataFrame, peaks: dict | None = None,
          not_recorded: list[dict] | None = None) -> pd.DataFrame:
    """tables/headline.csv (module doc) from the written runs and speedups tables, and a
    row of status NOT_RUN for each configuration the config asks for that has no run
    (not_recorded: plan.progress.not_recorded's dicts)."""
    runs, sp = tables.with_size(runs), tables.with_size(sp)
    keys = list(tables.GROUP)
    axes = tables.size_axes(sp)
    ok = runs[runs["status"] == "ok"]
    bw = (peaks or {}).get("copy_bandwidth_Bps")
    groups = tables.groups_by_key(ok, keys + ["variant"])
    pooled = pooled_spread(g["paired_speedup"] for k, g in groups.items()
                           if k[-1] != "eager" and "paired_speedup" in g)
    rows = []
    for r in sp.to_dict("records"):
        key = tuple(r[k] for k in keys)
        v = groups.get(tables.group_key(key + (r["variant"],)), ok.iloc[:0])
        e = groups.get(tables.group_key(key + ("eager",)), ok.iloc[:0])
        row = {**{k: r[k] for k in keys + axes}, "variant": r["variant"], "status": r["status"], "repeats": len(v),
               "noisy": bool(r.get("noisy_paired") if pd.notna(r.get("speedup_paired")) else r.get("noisy")),
               "host_moved": bool(r.get("host_moved", False)), "compile_s": r.get("compilation_latency_s", np.nan),
               "kernels_per_iter": r.get("kernels_per_iter", np.nan), "host_skewed": False}
        if v.empty:
            rows.append(row)
            continue
        side = _side(v)
        row.update({c: side[c] for c in ["wall_ms", *shares.PARTS, *shares.SHARES.values(), "bound",
                                         "host_per_launch_us"]})
        row["launches_per_iter"] = _median(v, "launch_calls_per_iter")
        row["bandwidth_frac"], row["flops_frac"] = _median(v, "copy_bandwidth_frac"), _median(v, "flops_frac")
        row["bandwidth_frac_measured"] = _median(v, "copy_bandwidth_frac_measured")
        row["ceiling_note"] = ceiling_note(row["bandwidth_frac"], row["flops_frac"], side["bytes_fused"],
                                           row["bandwidth_frac_measured"], r.get("device", "cuda"))
        row["traced_wall_ms"] = _median(v, "traced_wall_time_per_iter_ms")
        row["traced_busy_share"] = _median(v, "gpu_busy_fraction")
        traced = v["bound"].dropna() if "bound" in v else pd.Series(dtype=object)
        row["traced_bound"] = traced.mode().iloc[0] if len(traced) else None
        row["traced_launch_overhead_ratio"] = _median(v, "launch_overhead_ratio")
        if r["variant"] == "eager":
            row.update({"estimator": "reference", "speedup": 1.0, "eager_wall_ms": side["wall_ms"],
                        "eager_own_ms": side["wall_ms"], "reference": "itself"})
        elif len(e) or _paired(v):
            row.update(_speedup(pd.Series(r), v, e, pooled))
            if len(e):
                row["host_skewed"] = host_skew(row["estimator"], r.get("host_slowdown"), _side(e)["bound"],
                                               side["bound"])
                row.update(_parts(_side(e), side, row["speedup"], row["estimator"], bw))
                row.update(host_bound_fields(_side(e), side))
                row.update(traffic_spread(r, row))
            else:   # paired, with no eager run of its own: the speedup and the time saved, no parts
                ref = side["wall_ms"] * row["speedup"]
                row.update(eager_wall_ms=ref, saved_ms=ref - side["wall_ms"], reference=BESIDE_ONLY)
            saved = row["saved_ms"]
            row["break_even_iters"] = row["compile_s"] * 1e3 / saved \
                if (row["verdict"] == "faster" and pd.notna(row["compile_s"]) and pd.notna(saved) and saved > 0
                    and row["compile_s"] > 0) else np.nan
        rows.append(row)
    rows += not_run_rows(not_recorded or [], sp, keys + axes)
    cols = COLUMNS[:len(keys)] + axes + COLUMNS[len(keys):]
    return pd.DataFrame(rows, columns=cols).sort_values(keys + ["variant"], ignore_index=True)


NOT_RUN = "not run"   # the status of a configuration the config asks for that has no run


def not_run_rows(configs: list[dict], sp: pd.DataFrame, columns: list[str]) -> list[dict]:
    """A row of status NOT_RUN per configuration (model, variant, mode, dtype, batch, size;
    plan.progress.not_recorded), with its backend, device and size axes' values where the
    configuration names them (backend, device, sizes), else from a recorded configuration
    of the same model, batch, size, mode and dtype."""
    match = ["model", "batch", "size", "mode", "dtype"]
    rows = []
    for c in configs:
        c = dict(c, size=sizes.from_suffix(c.get("size") or ""))   # the run folder's suffix -> the label
        same = sp
        for k in match:
            same = same[same[k].astype(str) == str(c[k])] if k in same else same.iloc[:0]
        base = {**(same.iloc[0].to_dict() if len(same) else {}), **(c.get("sizes") or {}),
                **{k: c[k] for k in ("backend", "device") if c.get(k)}}
        row = {k: base.get(k, np.nan) for k in columns}
        row.update({k: c[k] for k in match}, variant=c["variant"], status=NOT_RUN, repeats=0,
                   noisy=False, host_moved=False, host_skewed=False)
        rows.append(row)
    return rows


BESIDE_ONLY = "eager timed beside it (no eager run of its own)"


def _paired(v: pd.DataFrame) -> bool:
    """Whether a variant's runs timed eager beside it (a paired speedup)."""
    return "paired_speedup" in v and bool(v["paired_speedup"].notna().any())


def host_bound_fields(e: dict, v: dict) -> dict:
    """host_bound and kernel_speedup of the module doc, from eager's and the variant's splits."""
    def share(x):
        return x["host_ms"] / x["wall_ms"] if pd.notna(x.get("host_ms")) and x.get("wall_ms") else np.nan
    shares_ = [share(e), share(v)]
    known = [x for x in shares_ if pd.notna(x)]
    ek, vk = e.get("kernel_ms"), v.get("kernel_ms")
    return {"host_bound": bool(any(x > HOST_BOUND_SHARE for x in known)) if known else None,
            "kernel_speedup": ek / vk if pd.notna(ek) and pd.notna(vk) and vk > 0 else np.nan}


def host_skew(estimator: str, host_slowdown, eager_bound, variant_bound) -> bool:
    """Whether a speedup is host-skewed (module doc): paired, timed on a host slower than
    tables.HOST_SLOW x its best, with exactly one of the two sides host-bound."""
    slow = host_slowdown is not None and host_slowdown == host_slowdown and host_slowdown > tables.HOST_SLOW
    return bool(estimator == "paired" and slow and None not in (eager_bound, variant_bound)
                and (eager_bound == "host") != (variant_bound == "host"))


def best(h: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, the variant with the highest headline speedup (eager where no
    variant beats it)."""
    h = tables.with_size(h)
    ran = h[h["speedup"].notna()]
    idx = ran.groupby(list(tables.GROUP), dropna=False, sort=True)["speedup"].idxmax()
    return ran.loc[idx.values].reset_index(drop=True)


def crossings(h: pd.DataFrame) -> pd.DataFrame:
    """Along every swept axis (the others held fixed): where each variant's headline
    speedup crosses 1, as the interval between the two swept values around it; `text`
    says it in words ('starts to beat eager between batch 8 and 32')."""
    rows = []
    keys = ["model", "variant", "mode", "dtype", "backend", "device"]
    d = tables.with_size(h[(h["variant"] != "eager") & h["speedup"].notna()])
    for key, axis, fixed, g in tables.along_axes(d, keys):
        g = g.sort_values(axis)
        vals, s, verd = g[axis].tolist(), g["speedup"].tolist(), g["verdict"].tolist()
        name = "batch" if axis == "batch" else axis
        steps = []
        for (a, sa, va), (b, sb, vb) in zip(zip(vals, s, verd), zip(vals[1:], s[1:], verd[1:])):
            if {va, vb} == {"faster", "slower"}:
                steps.append(f"{'starts' if vb == 'faster' else 'stops'} to beat eager between {name} {a:g} and "
                             f"{b:g} ({sa:.2f}x -> {sb:.2f}x)")
            elif (sa < 1) != (sb < 1):
                steps.append(f"no decisive crossing between {name} {a:g} and {b:g} ({sa:.2f}x -> {sb:.2f}x: "
                             f"{va} -> {vb})")
        decisive = set(verd) <= {"faster", "slower"}
        if not steps:
            where = f"{name} {vals[0]:g} to {vals[-1]:g}"
            steps = ([f"beats eager at every swept {where}"] if set(verd) == {"faster"} else
                     [f"is slower than eager at every swept {where}"] if set(verd) == {"slower"} else
                     [f"no verdict crosses 1 at the swept {where}"])
        unsure = [f"{x:g}" for x, v in zip(vals, verd) if v not in ("faster", "slower")]
        if not decisive and unsure:
            steps[-1] += f" (no verdict from the interval at {name} {', '.join(unsure)})"
        rows.append({**dict(zip(keys, key)), "axis": axis, "fixed": fixed,
                     "values": " ".join(f"{x:g}" for x in vals), "speedups": " ".join(f"{x:.2f}" for x in s),
                     "text": "; ".join(steps)})
    return pd.DataFrame(rows, columns=keys + ["axis", "fixed", "values", "speedups", "text"])
