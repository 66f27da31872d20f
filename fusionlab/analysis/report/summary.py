"""summary.md (headline tables of a sweep), from the tidy tables only."""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.analysis.report import story, suite_text, text, traffic_text
from fusionlab.analysis.report.text import drop_constant, fmt_time, md_table, missed_cost_words, speedup, varying_axes
from fusionlab.analysis.sweep import headline as sweep_headline
from fusionlab.analysis.sweep import overfusion, tables
from fusionlab.analysis.sweep import scaling as scaling_law
from fusionlab.core.io import atomic_path


def _md(df: pd.DataFrame) -> str:
    return md_table(df)


def _column(g: pd.DataFrame) -> pd.Series:
    """The column label of each configuration within one model's table: its batch, and
    its size label where the model's sizes were swept ("dim1024-num_layers8, batch 256")."""
    batch = "batch " + g["batch"].astype("Int64").astype(str)
    if g["size"].nunique() <= 1:
        return batch
    return g["size"].astype(str) + (", " + batch if g["batch"].nunique() > 1 else "")


def speedup_md(h: pd.DataFrame) -> list[str]:
    """Per model (and per value of any other swept axis): the variants as rows, batch sizes
    (and model sizes) as columns, each cell the headline speedup (text.speedup), the speedup
    across processes beside it only where the two differ (tables.host_moved), with the two
    eager times they use (_eager_sides); unsupported pairs left out (listed once at the end)."""
    out = ["## Speedup over eager (wall time)", "",
           "The headline speedup of every configuration: paired where the variant was paired (eager timed in "
           "the variant's own process, the host's speed cancelling), else across processes; with its interval "
           f"({sweep_headline.PAIRED_INTERVAL}) and faster / slower / inconclusive (the interval holds 1). "
           "A status (incorrect, oom, error, timeout) where the variant ran and failed. "
           f"`{text.HOST_SKEWED}`: a paired speedup timed while the host ran over {tables.HOST_SLOW:g} x slower "
           "than its best, with one side host-bound and the other not: the slow host stretched one side only, "
           "so the pairing does not cancel it (see 'Data quality').", ""]
    d = tables.with_size(h[(h["variant"] != "eager") & (h["status"] != "unsupported")])
    if d.empty:
        return out + ["No variant besides eager ran.", ""]
    axes = varying_axes(d)

    def cell(r):
        moved = f" (across processes {r['speedup_across']:.2f}x{_eager_sides(r)})" \
            if r.get("host_moved") is True and r.get("speedup_across") == r.get("speedup_across") else ""
        return (speedup(r) if r["status"] == "ok" else str(r["status"])) + moved

    for key, g in d.groupby(["model"] + axes, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        title = str(key[0]) + "".join(f", {a}={v}" for a, v in zip(axes, key[1:]))
        g = g.sort_values(["size", "batch"]).assign(cell=g.apply(cell, axis=1), column=_column)
        m = g.pivot_table(index="variant", columns="column", values="cell", aggfunc="first", sort=False)
        out += [f"### {title}", "", _md(m.reset_index()), ""]
    return out


def _eager_sides(r) -> str:
    """': eager beside it 6.68 ms, in its own processes 4.13 ms': the eager time of the
    paired speedup (eager_wall_ms) and of the one across processes (eager_wall_ms -
    host_speed_ms), which of the two moved being for the reader to see; '' where the
    record lacks either."""
    beside, speed = r.get("eager_wall_ms"), r.get("host_speed_ms")
    if beside is None or speed is None or beside != beside or speed != speed:
        return ""
    return f": eager beside it {text.fmt_time(beside)}, in its own processes {text.fmt_time(beside - speed)}"


def unsupported_md(runs: pd.DataFrame) -> list[str]:
    """The pairs that were not run, one line per variant and reason, with their models."""
    u = runs[runs["status"] == "unsupported"]
    if u.empty:
        return []
    out = ["## Not run: unsupported pairs", ""]
    for (variant, reason), g in u.groupby(["variant", u["reason"].fillna("no reason recorded")], sort=True):
        out.append(f"- **{variant}**: {reason} ({', '.join(sorted(set(g['model'].astype(str))))})")
    return out + [""]


def scaling_md(fits: pd.DataFrame) -> list[str]:
    """The scaling law of each (model, variant) along each axis with 3 or more sizes: one
    sentence per fit of the wall time (sweep.scaling.describe), grouped by model."""
    fits = fits[fits["metric"] == "wall"] if len(fits) else fits
    if fits.empty:
        return []
    out = ["## Scaling law: how wall time grows with size", "",
           "Fitted t = a + b * size^k on the per-size medians of the untraced wall time per "
           "iteration (log residuals); k's 95% CI from a bootstrap over the repeats; below the "
           "size where b * size^k = a the fixed cost (launches, Python) dominates. "
           "Table: `tables/scaling.csv` (also the GPU time).", ""]
    varying = [k for k in scaling_law.KEYS[2:] if k in fits and fits[k].nunique() > 1]   # mode, dtype, ...
    for model, g in fits.groupby("model", sort=True):
        out += [f"### {model}", ""]
        out += [f"- {''.join(f'{r[k]} ' for k in varying)}{scaling_law.describe(r)}"
                for _, r in g.sort_values(["axis", "fixed"] + varying + ["variant"]).iterrows()]
        out.append("")
    return out


def overfusion_md(kr: pd.DataFrame | None, top: int = 15) -> list[str]:
    """Over-fusion signs (sweep.overfusion): the rule, counts over each configuration's
    first repeat, and its fused kernels, the flagged and those with a sign first; or a
    plain statement that there is no GPU kernel data."""
    out = ["## Over-fusion signs: registers, spills and occupancy of fused kernels", ""]
    kr = overfusion.first_repeat(kr if kr is not None else pd.DataFrame(columns=overfusion.COLUMNS))
    if kr.empty:
        return out + ["No GPU kernel data: no run of this sweep recorded kernel launch resources (registers, "
                      "shared and local memory, block size), as on the CPU and torch.profiler backends or an nsys "
                      "export without GPU kernels, so there are no over-fusion signs to report.", ""]
    f = kr[kr["fused"].astype(bool)]
    spills, low, flagged = (int(f[c].astype(bool).sum()) for c in ("spills", "low_occupancy", "over_fusion"))
    measured = bool((f["bandwidth_source"] == "measured").any())
    bandwidth = ("Bandwidth, where Nsight Compute measured the kernel (`bandwidth_source` measured): the kernel's "
                 "own DRAM bandwidth over the fastest kernel's of the same model configuration "
                 "(`kernel_bandwidth_vs_best`), and its measured local-memory traffic (`local_bytes` > 0) counts "
                 "as spills; elsewhere the run configuration's (the model's ideal fused bytes / GPU busy time, "
                 "`bandwidth_vs_best`), the cost model not splitting bytes per kernel." if measured else
                 "Achieved bandwidth is the run configuration's (the model's ideal fused bytes / GPU busy time), "
                 "not the kernel's: the cost model does not split bytes per kernel.")
    out += [f"Each GPU kernel's launch resources in the measured range (`tables/kernel_resources.csv`, figure "
            f"`over_fusion`): registers per thread, local memory per thread (> 0: registers spilled), shared "
            f"memory, block and grid size, and its theoretical occupancy (the CUDA Occupancy Calculator's "
            f"formula against the GPU's own limits from the report) with what limits it. {bandwidth} "
            f"**Likely over-fusion**: {overfusion.RULE}" + (" (measured: the kernel's own bandwidth)" if measured
                                                              else "") + ".", "",
            f"{len(f)} fused kernels in {f.groupby(tables.GROUP + ['variant'], dropna=False).ngroups} "
            f"configurations (first repeat): {spills} spill, {low} have theoretical occupancy under "
            f"{overfusion.LOW_OCCUPANCY:g} limited by registers or shared memory, {flagged} flagged as likely "
            "over-fusion.", ""]
    if f.empty:
        return out + ["No fused kernel ran on the GPU in this sweep.", ""]
    f = f.assign(_sign=f["spills"].astype(bool) | f["low_occupancy"].astype(bool)).sort_values(
        ["over_fusion", "_sign", "time_per_iter_us"], ascending=False)
    keys = ["model"] + [c for c in ("mode", "dtype") if f[c].nunique() > 1] + ["variant", "batch"] \
        + (["size"] if f["size"].nunique() > 1 else [])
    cols = keys + ["name", "registers_per_thread", "local_mem_per_thread_bytes"] + (["local_bytes"] if measured else []) \
        + ["block_threads", "theoretical_occupancy", "occupancy_limited_by", "time_per_iter_us", "copy_bandwidth_frac",
           "bandwidth_vs_best"] + (["kernel_bandwidth_vs_best", "bandwidth_source"] if measured else []) + ["over_fusion"]
    shown = "" if len(f) <= top else f" The {top} first (all: `tables/kernel_resources.csv`)."
    return out + ["Fused kernels, the flagged first, then those with a sign, then by GPU time per iteration "
                  "(us)." + shown, "", _md(f.head(top)[cols].round(3)), ""]


def _setup(runs: pd.DataFrame, sp: pd.DataFrame, peaks: dict | None) -> list[str]:
    first = runs.iloc[0] if len(runs) else {}
    meta = {k: first.get(k) for k in ("backend", "device", "gpu", "torch", "nsys", "mode", "dtype")}
    out = ["## Setup and method", "",
           "Machine and setup: " + ", ".join(f"{k}={v}" for k, v in meta.items() if v == v and v is not None)]
    if peaks:
        out.append(f"Measured ceilings ({peaks.get('name')}): copy bandwidth "
                   f"{peaks['copy_bandwidth_Bps'] / 1e9:.0f} GB/s, {peaks.get('dtype')} matmul "
                   f"{peaks['matmul_flops'] / 1e12:.2f} TFLOP/s.")
    n = runs["status"].value_counts().to_dict()
    return out + ["", f"Runs: {len(runs)} ({', '.join(f'{v} {k}' for k, v in sorted(n.items()))}). "
                  "Wall times and speedups come from untraced iterations (no profiler tracing them); kernel "
                  "times and counts from the traced ones. `noisy`: the repeats' coefficient of variation exceeds "
                  f"{sp['noise_cv_threshold'].iloc[0] if len(sp) else ''}.", ""]


def _title(runs: pd.DataFrame) -> str:
    first = runs.iloc[0] if len(runs) else {}
    gpu = first.get("gpu")
    where = gpu if first.get("device") == "cuda" and isinstance(gpu, str) else first.get("device")
    models = ", ".join(sorted(set(runs["model"].astype(str)))) if len(runs) else ""
    return f"# fusionlab sweep: {models} on {where} ({first.get('backend')})"


def summary_md(runs: pd.DataFrame, sp: pd.DataFrame, cross: pd.DataFrame, peaks: dict | None,
               headline: pd.DataFrame | None = None, scaling: pd.DataFrame | None = None,
               kernel_resources: pd.DataFrame | None = None, ledger: pd.DataFrame | None = None,
               missed: pd.DataFrame | None = None, audit: list[str] | None = None,
               suite: dict | None = None, gap_ledger: pd.DataFrame | None = None) -> str:
    """summary.md: the opening sentences, the data-quality banner (with the audit's
    result: audit, its tally line then its violations), the time per iteration per model,
    then the details (a slower variant's gap ledger sentence among them: gap_ledger), the
    data-quality details last. Every speedup is the headline
    table's (sweep.headline: built from runs and sp where not given), the configurations the
    config asks for that have no run too (status sweep.headline.NOT_RUN)."""
    h = headline if headline is not None else sweep_headline.table(runs, sp, peaks)
    quality = [*not_recorded_md(h), *unsteady_md(runs), *slow_host_md(runs), *host_moved_md(sp),
               *host_sensitive_md(sp)]
    warnings = [line.split(": ", 1)[0].lstrip("# ") for line in quality if line.startswith("### ")]
    warned = {NOT_RECORDED: "configurations of the config have no run (a sweep stopped before them, or "
              "not yet run)",
              "Runs still warming up when timed": "runs were still warming up when timed",
              "Runs timed while the host ran slow": "runs were timed while the host ran slow",
              "Speedups across processes the host's speed moved": "speedups across processes differ from the "
              "paired ones (the host's speed moved them)",
              "Paired speedups the host's state moved": "paired speedups mix two host states"}
    out = [_title(runs), "", *story.opening_md(h)]
    out += story.banner_md(runs, h, [f"Some {warned.get(w, w)}: see 'Data quality' below." for w in warnings],
                           audit)
    out += story.times_md(h)
    out += speedup_md(h)
    out += story.saved_md(h)
    out += story.gap_md(gap_ledger)
    out += story.shares_md(h)
    out += story.crossover_md(h)
    sp, runs = tables.with_size(sp), tables.with_size(runs)
    k = sp[(sp["variant"] != "eager") & (sp["status"] != "unsupported")]
    k = pd.DataFrame({"model": k["model"], "variant": k["variant"], "mode": k["mode"], "dtype": k["dtype"],
                      "batch": k["batch"], "size": k["size"], "kernels per iteration": k["kernels_per_iter"].round(1),
                      "eager's": k["eager_kernels_per_iter"].round(1),
                      "fewer by": k["kernel_reduction"].map(lambda x: f"{x:.2f}x" if x == x else "")})
    out += ["## Kernels per iteration", "", _md(drop_constant(k, ["model", "variant", "batch"])), ""]
    out += story.compile_md(h)
    out += story.ceilings_md(h)
    ok = runs[runs["status"] == "ok"]
    if "profiler_overhead" in ok and ok["profiler_overhead"].notna().any():
        g = ok.groupby(["model", "variant", "mode", "dtype", "batch", "size"], dropna=False)[
            ["wall_time_per_iter_ms", "traced_wall_time_per_iter_ms", "profiler_overhead"]].median()
        g = g.reset_index()
        t = pd.DataFrame({"model": g["model"], "variant": g["variant"], "mode": g["mode"], "dtype": g["dtype"],
                          "batch": g["batch"], "size": g["size"],
                          "untraced": g["wall_time_per_iter_ms"].map(fmt_time),
                          "traced": g["traced_wall_time_per_iter_ms"].map(fmt_time),
                          "traced / untraced": g["profiler_overhead"].map(lambda x: f"{x:.2f}x")})
        out += ["## The profiler's own cost", "",
                "Wall time per iteration under tracing against the untraced loop (medians over repeats): why "
                "wall times, speedups and idle shares are taken untraced.", "",
                _md(drop_constant(t, ["model", "variant", "batch"])), ""]
    section = scaling_md(scaling) if scaling is not None else []
    if section:
        out += [""] + section
    out += overfusion_md(kernel_resources)
    out += traffic_text.traffic_md(runs, sp)
    out += ledger_md(ledger, missed)
    out += suite_text.sections(suite)
    out += ["## Data quality", ""] + (quality or ["No run was timed on a slow host or still warming up, and "
                                                  "no two speedup estimators disagree.", ""])
    out += harness_md(runs)
    bad = runs[~runs["status"].isin(["ok", "unsupported"])]
    if len(bad):
        out += ["## Runs that are not ok", "",
                _md(bad[["model", "variant", *varying_axes(runs), "batch", "size", "repeat", "status", "reason"]]), ""]
    out += unsupported_md(runs)
    return "\n".join(out) + "\n"


NOT_RECORDED = "Configurations with no run"


def not_recorded_md(h: pd.DataFrame) -> list[str]:
    """The configurations the config asks for that have no run (the headline's rows of
    status NOT_RUN), one line each."""
    configs = h[h["status"].eq(sweep_headline.NOT_RUN)].to_dict("records") if "status" in h else []
    if not configs:
        return []
    lines = [f"- {c['model']} {c['variant']}, {c['mode']} {c['dtype']}, batch {c['batch']}"
             + (f", {c['size']}" if c.get("size") not in (None, "", "default") else "") for c in configs]
    return [f"### {NOT_RECORDED}: {len(configs)}", "",
            f"The config asks for these, and no run of them is recorded: `tables/headline.csv` has each "
            f"with status `{sweep_headline.NOT_RUN}`, the headline figure marks it in its panel, "
            "and the suite counts it "
            "apart from the configurations tried.", "", *lines, ""]


def unsteady_md(runs: pd.DataFrame) -> list[str]:
    """The runs still speeding up when their timing stopped (tables.STEADY_RATIO)."""
    col = "untraced_last_window_ratio"
    if col not in runs:
        return []
    faster = runs[(runs["status"] == "ok") & (runs[col] < tables.STEADY_RATIO)]
    # the host probe after the last window was fast too: the host sped up, not the process
    probe = faster["untraced_last_probe_ratio"] if "untraced_last_probe_ratio" in faster else None
    host = faster[probe < tables.STEADY_RATIO] if probe is not None else faster.iloc[:0]
    slow = faster.drop(host.index)
    if slow.empty:
        return []
    also = (f" {len(host)} more ended as fast, with the host probe after their last window as much faster: "
            "their host sped up, so they are left out here." if len(host) else "")
    return ["### Runs still warming up when timed", "",
            f"Their last untraced timing window was under {tables.STEADY_RATIO:g} x the windows' median, "
            "while the host's speed held (host probe): the process was still getting faster, so its wall "
            "time (the median) is above its steady state. Raise `warmup_min_s` (or `warmup_iters`) for them."
            + also, "",
            _md(slow[["model", "variant", *varying_axes(runs), "batch", "size", "repeat",
                      "untraced_wall_time_per_iter_ms", col]].round(3)), ""]


def slow_host_md(runs: pd.DataFrame, top: int = 15) -> list[str]:
    """The runs timed while their host's CPU ran slow (tables.HOST_SLOW): how many, and
    the `top` slowest."""
    col = "host_slowdown"
    if col not in runs:
        return []
    ok = runs[(runs["status"] == "ok") & runs[col].notna()]
    slow = ok[ok[col] > tables.HOST_SLOW].sort_values(col, ascending=False)
    if slow.empty:
        return []
    shown = "" if len(slow) <= top else f" The {top} slowest (all: `host_slowdown` in tables/runs.csv):"
    return ["### Runs timed while the host ran slow", "",
            f"{len(slow)} of {len(ok)} runs: the host probe beside their timing windows (fixed CPU-only "
            f"PyTorch work) took over {tables.HOST_SLOW:g} x its fastest time in this sweep on the same host, "
            "so the host's CPU was slower while they were timed (on a shared machine a neighbour can do "
            "that; pinning does not help). A host-bound wall time is inflated by up to that factor; a "
            "GPU-bound one is not. A paired speedup cancels it only where the variant and eager are slowed "
            "alike; where one is host-bound and the other GPU-bound it does not (\"Paired speedups the host's "
            "state moved\" lists those it moved). For wall times, rerun or add repeats."
            + shown, "",
            _md(slow.head(top)[["model", "variant", *varying_axes(runs), "batch", "size", "repeat",
                                "untraced_wall_time_per_iter_ms", "host_probe_ms", col]].round(3)), ""]


def host_sensitive_md(sp: pd.DataFrame, top: int = 15) -> list[str]:
    """The paired speedups that the host's state moved (tables: paired_host_sensitive):
    each with its value at the host's fast and at its slow state."""
    if "paired_host_sensitive" not in sp:
        return []
    d = tables.with_size(sp[(sp["variant"] != "eager") & sp["paired_host_sensitive"].fillna(False).astype(bool)])
    if d.empty:
        return []
    d = d.assign(off=np.abs(np.log(d["speedup_paired_fast_host"] / d["speedup_paired_slow_host"])))
    d = d.sort_values("off", ascending=False)
    keys = ["model"] + varying_axes(d) + ["variant", "batch"] + (["size"] if d["size"].nunique() > 1 else [])
    cols = keys + ["speedup_paired", "speedup_paired_fast_host", "speedup_paired_slow_host"]
    return ["### Paired speedups the host's state moved", "",
            f"{len(d)} paired speedups were timed while the host's speed changed (the host probe beside each "
            "pair of windows found it fast for some pairs and slow for others, over 1.2x apart), and the pairs "
            "at the two states gave speedups over 5% apart: one side slows with the host and the other does "
            "not as much (on a GPU: a host-bound side beside a GPU-bound one), so the host's speed does not "
            "cancel in the ratio and the paired value mixes two speedups. Read `fast host` (the host at its best speed in the run) as the "
            "speedup; `slow host` is what a slowed host gives."
            + ("" if len(d) <= top else f" The {top} furthest apart (all: paired_host_sensitive in "
               "tables/speedups.csv):"), "",
            _md(d.head(top)[cols].round(3).rename(columns={"speedup_paired_fast_host": "fast host",
                                                           "speedup_paired_slow_host": "slow host"})), ""]


def harness_md(runs: pd.DataFrame) -> list[str]:
    """What the timing loop itself cost (run_metrics.harness_us_per_iter), against the
    iterations it timed."""
    if "harness_us_per_iter" not in runs:
        return []
    ok = runs[(runs["status"] == "ok") & runs["harness_us_per_iter"].notna()
              & runs["untraced_wall_time_per_iter_ms"].notna()]
    if ok.empty:
        return []
    share = ok["harness_us_per_iter"] / (ok["untraced_wall_time_per_iter_ms"] * 1e3)
    return ["## The timing loop's own cost", "",
            f"The untraced windows time the loop a user writes (one `no_grad` around direct calls of the "
            f"variant); the same windows over a variant that does nothing took "
            f"{ok['harness_us_per_iter'].median():.2f} us per iteration (median over {len(ok)} runs; at most "
            f"{ok['harness_us_per_iter'].max():.2f}), at most {share.max():.2%} of an iteration timed "
            "(`harness_us_per_iter` in tables/runs.csv).", ""]


def host_moved_md(sp: pd.DataFrame, top: int = 15) -> list[str]:
    """The speedups across processes that the host's speed moved (tables.host_moved): how
    many, and the `top` furthest from the paired ones, with the host_slowdown of the
    variant's and eager's processes."""
    if "speedup_paired" not in sp:
        return []
    d = tables.with_size(sp[(sp["variant"] != "eager") & (sp["status"] == "ok") & sp["speedup_paired"].notna()
                            & sp["speedup_wall"].notna()])
    if d.empty:
        return []
    d = d.assign(across_over_paired=d["speedup_wall"] / d["speedup_paired"])
    d = d.assign(off=np.abs(np.log(d["across_over_paired"])))
    moved = d[d.apply(tables.host_moved, axis=1).astype(bool)].sort_values("off", ascending=False)
    if moved.empty:
        return []
    keys = ["model"] + varying_axes(d) + ["variant", "batch"] + (["size"] if d["size"].nunique() > 1 else [])
    cols = keys + ["speedup_paired", "speedup_wall", "across_over_paired"] \
        + [c for c in ("host_slowdown", "eager_host_slowdown") if c in d and d[c].notna().any()]
    return ["### Speedups across processes the host's speed moved", "",
            f"{len(moved)} of {len(d)} paired speedups differ from the speedup across processes by more than "
            f"{tables.PAIRED_GAP:g} x either way (and by more than its CI, where it has one): eager timed "
            "beside the variant and eager in its own processes ran at different speeds. The host's speed "
            "differing between processes moves the speedup across processes: compare the variant's and "
            "eager's `host_slowdown` (the host probe over the sweep's fastest; 1 = the host at its best). "
            "Where both are near 1, the host was steady and eager's windows beside the variant moved within "
            "their process (its run's `timing.json`, `eager_windows_ms`): neither speedup is then the steadier."
            + ("" if len(moved) <= top else f" The {top} furthest apart (all: speedup_paired against "
               "speedup_wall in tables/speedups.csv):"), "",
            _md(moved.head(top)[cols].round(3)), ""]


PER_MODEL = 3   # rows per model in the ledger's per-model tables


def ledger_md(ledger: pd.DataFrame | None, missed: pd.DataFrame | None, top: int = 10) -> list[str]:
    """The fusion ledger (sweep.ledger): the fused kernels that saved the most eager time,
    then the fusions the compiler left out, most time cost first, with its reasons."""
    if ledger is None:
        return []
    out = ["## The fusion ledger: what fusing saved, and what stayed apart", ""]
    if ledger.empty:
        return out + ["No compiled run kept Inductor's provenance (`inductor/` beside run.json), so there is no "
                      "ledger; the fusion map lists kernels with ops parsed from their names.", ""]
    keys = ["model", "variant", *varying_axes(ledger), "batch"] + [c for c in ("size",) if ledger[c].nunique() > 1]
    lg = ledger.sort_values("time_saved_us", ascending=False, na_position="last")
    agree = int(ledger["name_agrees"].astype(str).eq("True").sum())
    t = pd.DataFrame({**{c: lg[c] for c in keys}, "fused kernel": lg["kernel"].str.slice(0, 48),
                      "computes": lg["torch_ops"].where(lg.get("ops_source", "provenance") != "name",
                                                        lg["ops_by_name"] + " (by name)").astype(str).str.replace("+", ", "),
                      "eager": (lg["eager_time_us"] / 1e3).map(fmt_time), "fused": (lg["time_us"] / 1e3).map(fmt_time),
                      "saved": (lg["time_saved_us"] / 1e3).map(fmt_time)})
    out += [f"Each fused kernel against the eager kernels its ops ran as (`tables/fusion_ledger.csv`: "
            f"{len(ledger)} kernels; what each computes from Inductor's provenance; {len(ledger) - agree} "
            f"of them have a name that lists an op they do not compute). Most eager time saved first.", "",
            _md(t.head(top)), ""]
    out += _per_model(t, "The fused kernels that saved each model the most eager time")
    m = missed if missed is not None else pd.DataFrame()
    apart = m[m["kind"] == "left apart"] if len(m) else m
    if apart.empty:
        return out + ["No kernel pair was left apart with a buffer between them.", ""]
    reasons = apart["reason"].astype(str).str.replace(r"extern_kernels\.\w+|torch\.ops\.\S+", "<library call>",
                                                      regex=True).value_counts()
    pair = apart.assign(pair=apart["producer"].astype(str).str.split(":").str[0].str.slice(0, 36) + " -> "
                        + apart["consumer"].astype(str).str.split(":").str[0].str.slice(0, 36))
    g = pair.groupby(keys + ["pair", "reason"], dropna=False, sort=False).agg(
        n=("pair", "size"), nbytes=("buffer_bytes", "sum"), cost=("time_cost_us", lambda x: x.sum(min_count=1)))
    g = g.reset_index().sort_values(["cost", "nbytes"], ascending=False, na_position="last")
    t = pd.DataFrame({**{c: g[c] for c in keys}, "producer -> consumer": g["pair"], "times": g["n"],
                      "buffers MB": (g["nbytes"] / 1e6).round(3), "time cost": (g["cost"] / 1e3).map(fmt_time),
                      "why": g["reason"]})
    breaks = int((m["kind"] == "graph break").sum())
    return out + [f"Kernel pairs the compiler left apart (`tables/missed_fusions.csv`: {len(apart)} pairs, "
                  f"{breaks} graph breaks), {missed_cost_words(apart.get('bandwidth_source', []))}, the same "
                  "pair of kernels in one configuration counted together; reasons: "
                  + "; ".join(f"{r} ({n})" for r, n in reasons.items()) + ".", "", _md(t.head(top)), "",
                  *_per_model(t, "The pairs left apart that cost each model the most")]


def _per_model(t: pd.DataFrame, title: str, top: int = PER_MODEL) -> list[str]:
    """The first `top` rows of each model of a ledger table already in reading order (the
    sweep's top rows above may all be one model's); nothing for a sweep of one model."""
    if t["model"].nunique() < 2:
        return []
    return [f"{title} ({top} each):", "", _md(t.groupby("model", sort=True, group_keys=False).head(top)
                                                .sort_values("model", kind="stable")), ""]


def write_text(path: str, text: str) -> None:
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        f.write(text)
