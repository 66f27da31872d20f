"""Are the runner's wall times and paired speedups those of a bare
`for` loop?

One process per configuration (model, variant, batch, mode). In it, the model is built and
the variant checked against eager by the runner's own code (fusionlab.runner), then slots
of windows follow one another; a slot runs four kinds of windows back to back, in an order
that rotates from slot to slot:

- runner: the runner's timing code as a sweep runs it (timing.time_paired_windows over
  timing.make_loop's loops, the host probe between windows, the collector paused):
  two pairs of the variant's and eager's windows (variant-eager, eager-variant);
- bare:   the oracle, written here by hand and sharing no code with the runner: a plain
  `for` over model(x) under one torch.no_grad() (train: zero_grad, forward, mean,
  backward), between two torch.cuda.synchronize() and time.perf_counter(); variant and
  eager windows alternate as the runner's do (two pairs);
- old:    a heavier step, built here (no_grad entered and two Python calls per
  iteration; train: the sum of outputs' float means and the gradients' list): what
  such a step costs against the bare loop;
- alone:  two bare-loop windows of the variant with no eager window between (does
  alternating itself move the variant?).

Slots are added (at least --min-slots) until the 95% CIs of the runner's ratios are within
0.5%, --max-slots or --max-s seconds. Each ratio is taken within a slot (a slot lasts well
under a second; the lent VMs' host speed changes every few seconds, by up to 2x, and a
ratio of medians over blocks seconds apart measured that, not the runner: by blocks of 5
windows, alone / bare ranged widely: benchmarks/results/h100-bare-loop-blocks), then
the median over slots: per configuration, runner / bare for the variant's wall time, for
eager's, and for the paired speedup (eager / variant within each kind), the old step /
bare, alone / bare, and the harness's own cost (timing.harness_cost, at --iters, as a
sweep records it) in us per iteration. Target: runner / bare within 2% for wall time and
paired speedup, harness <= 0.5 us per iteration.

    python benchmarks/bare_loop.py sweep --grid holdout --out results/bare   # one process each
    python benchmarks/bare_loop.py report --out results/bare                 # table + CSV
    python benchmarks/bare_loop.py one --model mlp --variant compile --batch 256   # one config
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

from fusionlab.core.ratios import t95

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository

# (models, variants, batches, mode): the hold-out grid, and config.yaml's sweep
GRIDS = {
    "holdout": [(["pointwise_heavy", "mlp"], ["compile", "compile_reduce_overhead"], [256, 2048], "inference")],
    "default": [(["pointwise_heavy", "matmul_heavy", "mlp"], ["compile"], [128, 1024, 4096], "inference")],
    "train": [(["deep_gelu_mlp"], ["compile"], [256], "train")],
    "cpu": [(["mlp"], ["jit_script"], [64], "inference")],
    # two real networks (pip install .[models]) at config/real-models.yaml's batch sizes, bf16
    "real": [(["bert"], ["compile"], [8, 32], "inference", "bfloat16"),
             (["llama_block"], ["compile"], [1, 4], "inference", "bfloat16")],
    # the configurations whose paired CI stayed widest (benchmarks/results/h100-bare-loop-noisy)
    "noisiest": [(["mlp"], ["compile"], [128, 256], "inference"),
                 (["pointwise_heavy"], ["compile_reduce_overhead"], [256], "inference"),
                 (["pointwise_heavy"], ["compile"], [1024], "inference"),
                 (["deep_gelu_mlp"], ["compile"], [256], "train")],
}
TARGET = 0.02          # runner / bare within 2%
HARNESS_US = 0.5       # harness cost per iteration at most
WINDOW_S = 0.25        # a window longer than this is cut to fewer iterations (GPU-bound: time per iteration holds)
SLOT_CI = 0.005        # slots are added until the runner's ratios' 95% CIs are within 0.5%


def bare_window(torch, mode, f, m, x, n, cuda):
    """The oracle: n iterations of f(x), as a user writes them, ms per iteration."""
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if mode == "train":
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            m.zero_grad(set_to_none=True)
            f(x).mean().backward()
        sync()
        return (time.perf_counter() - t0) * 1e3 / n
    with torch.no_grad():
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            f(x)
        sync()
    return (time.perf_counter() - t0) * 1e3 / n


def old_loop(torch, mode, f, m, inputs):
    """A heavier step: no_grad entered and two Python calls per iteration, timed through a lambda."""
    def step(f, m, xs=inputs):
        if mode == "train":
            m.zero_grad(set_to_none=True)
            outs = [f(*xs)]
            sum(o.float().mean() for o in outs).backward()
            return outs + [p.grad for p in m.parameters() if p.grad is not None]
        with torch.no_grad():
            return f(*xs)
    one = lambda: step(f, m)  # noqa: E731  (as the runner called it)

    def loop(n):
        for _ in range(n):
            one()
    return loop


def measure(model: str, variant: str, batch: int, mode: str, min_slots: int, max_slots: int, max_s: float,
            iters: int, device: str = "auto", dtype: str = "float32") -> dict:
    """One configuration, in this process (module doc). Returns its record."""
    import torch
    from fusionlab import runner as run
    from fusionlab.jobs import host_probe
    from fusionlab.runner import timing
    imported = ["--model-from", json.dumps(IMPORTED[model])] if model in IMPORTED else []
    args = run.parse_args(["--model", model, *imported, "--variant", variant, "--batch", str(batch), "--mode", mode,
                           "--dtype", dtype, "--device", device, "--iters", str(iters), "--out", os.devnull])
    dev = "cuda" if (device != "cpu" and torch.cuda.is_available()) else "cpu"
    cuda = dev == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    rec = {"model": model, "variant": variant, "batch": batch, "mode": mode, "dtype": dtype, "device": dev,
           "gpu": torch.cuda.get_device_name(0) if cuda else None,
           "versions": run.versions(torch, dev, "nsys"), "min_slots": min_slots, "max_slots": max_slots,
           "max_s": max_s}
    torch.manual_seed(0)
    m, ref, fn, inputs = run.build(torch, args, dev)
    check = run.check_against_eager(torch, args, dev, run.make_step(torch, args, inputs, {}), fn, m, ref, ref,
                                    inputs, sync)
    rec["check_passed"] = bool(check["passed"])
    if not check["passed"]:
        rec["status"] = "incorrect"
        return rec
    assert len(inputs) == 1, "the bare loop is written for one input"
    x, = inputs
    loop_of = run.timed_loops(torch, args, fn, m, ref, inputs, {})
    runner = (loop_of(fn, m), loop_of(ref, ref))
    old = (old_loop(torch, mode, fn, m, inputs), old_loop(torch, mode, ref, ref, inputs))
    for lp in runner + old:
        timing.warm_up(lp, sync, 50, 0.2)
    # iterations per window: `iters`, fewer where a window would last over WINDOW_S
    slowest = max(timing.window(lp, sync, 5) for lp in runner)
    n = max(10, min(iters, int(WINDOW_S * 1e3 / max(slowest, 1e-6))))
    rec["iters"] = n
    probe, probe_ms = host_probe.make_probe(torch), []
    w = {k: [] for k in ("runner_v", "runner_e", "bare_v", "bare_e", "old_v", "old_e", "alone_v")}

    def runner_pair():
        v, e = timing.time_paired_windows(*runner, sync, 2, n, probe, probe_ms)
        w["runner_v"].append(v), w["runner_e"].append(e)

    def bare_pair():
        v, e = [], []
        for which in ("v", "e", "e", "v"):
            f, mm = (fn, m) if which == "v" else (ref, ref)
            (v if which == "v" else e).append(bare_window(torch, mode, f, mm, x, n, cuda))
        w["bare_v"].append(v), w["bare_e"].append(e)

    def old_pair():
        v, e = timing.time_paired_windows(*old, sync, 2, n)
        w["old_v"].append(v), w["old_e"].append(e)

    def alone():
        w["alone_v"].append([bare_window(torch, mode, fn, m, x, n, cuda) for _ in range(2)])

    kinds = [runner_pair, bare_pair, old_pair, alone]
    t0, slot = time.perf_counter(), 0
    while True:
        for k in kinds[slot % 4:] + kinds[:slot % 4]:
            k()
        slot += 1
        if slot >= max_slots or (slot >= min_slots and (time.perf_counter() - t0 > max_s
                                                         or slot_ratios(w)["ci"] <= SLOT_CI)):
            break
    rec.update(status="ok", slots=slot, windows_ms=w, host_probe_ms=probe_ms,
               harness_us_per_iter=timing.harness_cost(lambda f: timing.make_loop(torch, "inference", f, inputs),
                                                       sync, iters),
               **slot_ratios(w))
    return rec


def _slot_mean(slot_windows: list[float]) -> float:
    return statistics.fmean(slot_windows)


def _median_ci(ratios: list[float]) -> tuple[float, float]:
    """The median of per-slot ratios and the 95% Student t half-width of their log mean
    (relative), for the stopping rule."""
    logs = [math.log(r) for r in ratios]
    half = (t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))) if len(logs) > 1 else math.inf
    return statistics.median(ratios), math.expm1(half)


def slot_ratios(w: dict) -> dict:
    """Per slot (the windows of every kind run back to back, in rotating order), the
    runner's and the old step's wall time and paired speedup over the bare loop's in the
    same slot, and alone / bare; each the median over the slots. A slot's windows are
    taken within a second of each other, so a change of the host's speed between slots
    (seconds apart on the lent VMs) moves both sides of a ratio alike. `ci`: the largest
    relative 95% half-width of the runner's three ratios (wall, eager wall, paired)."""
    m = {k: [_slot_mean(s) for s in v] for k, v in w.items()}
    out, cis = {}, []
    slots = range(len(m["bare_v"]))
    for kind in ("runner", "old"):
        for name, num, den in (("wall", [m[f"{kind}_v"][i] for i in slots], m["bare_v"]),
                               ("eager_wall", [m[f"{kind}_e"][i] for i in slots], m["bare_e"]),
                               ("paired", [m[f"{kind}_e"][i] / m[f"{kind}_v"][i] for i in slots],
                                [m["bare_e"][i] / m["bare_v"][i] for i in slots])):
            med, half = _median_ci([a / b for a, b in zip(num, den)])
            out[f"{kind}_{name}_ratio"] = med
            if kind == "runner":
                out[f"runner_{name}_ci"] = half
                cis.append(half)
    out["alone_wall_ratio"] = _median_ci([a / b for a, b in zip(m["alone_v"], m["bare_v"])])[0]
    for k in w:
        out[f"{k}_ms"] = statistics.median(x for s in w[k] for x in s)
    for kind in ("runner", "bare", "old"):
        out[f"{kind}_paired"] = out[f"{kind}_e_ms"] / out[f"{kind}_v_ms"]
    # the bare loop's paired speedup with the 95% half-width of its per-slot ratios
    half = _median_ci([m["bare_e"][i] / m["bare_v"][i] for i in slots])[1]
    out["bare_paired_lo"], out["bare_paired_hi"] = out["bare_paired"] / (1 + half), out["bare_paired"] * (1 + half)
    out["ci"] = max(cis) if cis else math.inf
    return out


def ratios(rec: dict) -> dict:
    """The table's columns of one configuration's record."""
    out = {k: rec[k] for k in ("model", "variant", "batch", "mode")}
    out["dtype"] = rec.get("dtype", "float32")
    if rec.get("status") != "ok":
        return {**out, "status": rec.get("status")}
    out.update(status="ok", iters=rec["iters"], slots=rec["slots"], bare_wall_ms=rec["bare_v_ms"],
               wall=rec["runner_wall_ratio"], eager_wall=rec["runner_eager_wall_ratio"],
               paired=rec["runner_paired_ratio"], ci=rec["ci"],
               bare_paired=rec["bare_paired"], runner_paired=rec["runner_paired"],
               bare_paired_lo=rec.get("bare_paired_lo"), bare_paired_hi=rec.get("bare_paired_hi"),
               old_wall=rec["old_wall_ratio"], old_paired=rec["old_paired_ratio"],
               alone_wall=rec["alone_wall_ratio"], harness_us=rec["harness_us_per_iter"])
    out["within_target"] = all(abs(out[k] - 1) <= TARGET for k in ("wall", "eager_wall", "paired"))
    return out


# the real networks' factories, by import path (as config/real-models.yaml names them)
IMPORTED = {name: {"factory": f"fusionlab.experiments.real_models.{name}:build"}
            for name in ("resnet50", "bert", "gpt2", "vit", "llama_block")}


def configs(grid: str):
    """(model, variant, batch, mode, dtype) of a grid (dtype float32 unless it names one)."""
    for models, variants, batches, mode, *dtype in GRIDS[grid]:
        for mdl in models:
            for b in batches:
                for v in variants:
                    yield mdl, v, b, mode, (dtype or ["float32"])[0]


def cmd_sweep(a) -> int:
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "bare_loop.jsonl")
    done = set()
    if os.path.exists(path):
        with open(path) as f:
            done = {(r["model"], r["variant"], r["batch"], r["mode"], r.get("dtype", "float32"))
                    for r in map(json.loads, f)}
    for grid in a.grid.split(","):
        for cfg in configs(grid):
            if cfg in done:
                continue
            t0 = time.time()
            p = subprocess.run([sys.executable, "-m", "fusionlab.bench.bare_loop", "one", "--model", cfg[0], "--variant", cfg[1],
                                "--batch", str(cfg[2]), "--mode", cfg[3], "--dtype", cfg[4],
                                "--min-slots", str(a.min_slots),
                                "--max-slots", str(a.max_slots), "--max-s", str(a.max_s), "--iters", str(a.iters),
                                "--device", a.device],
                               capture_output=True, text=True, cwd=ROOT)
            line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
            if p.returncode or not line.startswith("{"):
                line = json.dumps({"model": cfg[0], "variant": cfg[1], "batch": cfg[2], "mode": cfg[3],
                                   "dtype": cfg[4], "status": "error", "reason": p.stderr.strip().splitlines()[-1:]})
            with open(path, "a") as f:
                f.write(line + "\n")
            print(f"{'/'.join(map(str, cfg))}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
            done.add(cfg)
    return cmd_report(a)


def table(out: str):
    import pandas as pd
    with open(os.path.join(out, "bare_loop.jsonl")) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    return pd.DataFrame([ratios(r) for r in recs]), recs


def cmd_report(a) -> int:
    df, recs = table(a.out)
    ok = [r for r in recs if r.get("status") == "ok"]
    if ok:
        v, g = ok[0]["versions"], ok[0]["gpu"]
        print(f"# {g or 'CPU'}; torch {v['torch']}, triton {v['triton']}, nsys {v['nsys']}, driver {v['driver']}")
    df.to_csv(os.path.join(a.out, "bare_loop.csv"), index=False)
    cols = [c for c in ("model", "variant", "batch", "iters", "slots", "bare_wall_ms", "wall", "eager_wall",
                        "bare_paired", "runner_paired", "paired", "ci", "old_wall", "old_paired", "alone_wall", "harness_us",
                        "within_target", "status") if c in df]
    print(df[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    if "within_target" in df:
        miss = df[df["status"].eq("ok") & ~df["within_target"].fillna(False).astype(bool)]
        print(f"\nwithin {TARGET:.0%} (wall, eager wall, paired): {len(df) - len(miss)} of {len(df)}; "
              f"harness max {df['harness_us'].max():.3f} us per iteration (target {HARNESS_US})")
    return 0


def compare(bare, speedups):
    """The bare loop's paired speedup (its own process) beside the sweep's paired speedup
    of the same (model, variant, batch, mode, dtype): one row each, with both intervals,
    bare / sweep, whether the intervals overlap and whether the sweep's speedup lies in the
    bare loop's interval (each NA where a side has no interval or no speedup)."""
    import pandas as pd
    keys = ["model", "variant", "batch", "mode", "dtype"]
    b = bare[bare["status"].eq("ok")][keys + ["bare_paired", "bare_paired_lo", "bare_paired_hi"]]
    s = speedups[keys + ["speedup_paired", "speedup_paired_lo", "speedup_paired_hi", "repeats_ok"]]
    out = b.merge(s, on=keys, how="left")
    out["bare_over_sweep"] = out["bare_paired"] / out["speedup_paired"]
    both = out[["bare_paired_lo", "bare_paired_hi", "speedup_paired_lo", "speedup_paired_hi"]].notna().all(axis=1)
    overlap = ((out["bare_paired_lo"] <= out["speedup_paired_hi"]) & (out["speedup_paired_lo"] <= out["bare_paired_hi"]))
    out["intervals_overlap"] = overlap.astype("boolean").where(both, pd.NA)   # NA: a side without an interval
    inside = (out["bare_paired_lo"] <= out["speedup_paired"]) & (out["speedup_paired"] <= out["bare_paired_hi"])
    known = out[["bare_paired_lo", "bare_paired_hi", "speedup_paired"]].notna().all(axis=1)
    out["sweep_in_bare_interval"] = inside.astype("boolean").where(known, pd.NA)
    return out.reset_index(drop=True) if len(out) else pd.DataFrame(columns=[*keys, "bare_over_sweep"])


def cmd_compare(a) -> int:
    import pandas as pd
    if not a.speedups:
        print("compare: --speedups tables/speedups.csv of the sweep to compare with", file=sys.stderr)
        return 2
    df, _ = table(a.out)
    if "dtype" not in df:
        df["dtype"] = "float32"
    out = compare(df, pd.read_csv(a.speedups))
    out.to_csv(os.path.join(a.out, "bare_vs_sweep.csv"), index=False)
    print(out.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("step", choices=("sweep", "report", "one", "compare"))
    p.add_argument("--grid", default="holdout,default", help=f"comma-separated: {', '.join(GRIDS)}")
    p.add_argument("--out", default="results/bare_loop")
    p.add_argument("--model")
    p.add_argument("--variant")
    p.add_argument("--batch", type=int)
    p.add_argument("--mode", default="inference")
    p.add_argument("--min-slots", type=int, default=10)
    p.add_argument("--max-slots", type=int, default=60)
    p.add_argument("--max-s", type=float, default=25.0, help="no slot is added after this many seconds")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--speedups", help="compare: a sweep's tables/speedups.csv")
    a = p.parse_args(argv)
    if a.step == "one":
        print(json.dumps(measure(a.model, a.variant, a.batch, a.mode, a.min_slots, a.max_slots, a.max_s, a.iters,
                                a.device, a.dtype)))
        return 0
    return {"sweep": cmd_sweep, "report": cmd_report, "compare": cmd_compare}[a.step](a)


if __name__ == "__main__":
    sys.exit(main())
