"""The oracle of a sweep's speedups: a bare loop of the same model, in processes of its own.

Per configuration (model, variant, batch, sizes, mode, dtype), `--processes` processes one
after another, nothing else of ours running: each builds the model with the sweep's own
factory (fusionlab.experiments.registry, the same config's import_models), applies the
variant with torch.compile directly (the runner's code is not used to time), warms both
up, then times paired windows: `for` loops of model(x) under one torch.no_grad() (train:
zero_grad, forward, mean, backward, SGD step), between torch.cuda.synchronize() and
time.perf_counter(), eager and the variant alternating (variant-eager, eager-variant, ...).
A process's speedup is eager's median window / the variant's; the oracle is the median of
the processes'.

    python benchmarks/bare_loop_processes.py run --configfile CONFIG --out bare.json [--processes 3]
    python benchmarks/bare_loop_processes.py compare --bare bare.json --headline RESULTS/tables/headline.csv

`compare` prints, per configuration, the sweep's speedup and interval beside the oracle:
within 3% (|sweep / oracle - 1| <= 0.03) and covered (the interval holds the oracle), with
the fraction of each, and of the host-bound configurations the kernel-time speedup.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANT_MODES = {"compile": "default", "compile_reduce_overhead": "reduce-overhead",
                 "compile_max_autotune_no_cudagraphs": "max-autotune-no-cudagraphs"}


def one_process(cfg: dict) -> dict:
    """One process's paired windows (module doc); runs in the child."""
    import torch
    sys.path.insert(0, ROOT)
    from fusionlab.experiments import registry
    registry.import_models(cfg.get("import_models") or {})
    spec = registry.MODELS[cfg["model"]]
    dtype = getattr(torch, {"bfloat16": "bfloat16", "float32": "float32"}.get(cfg["dtype"], "float32"))
    torch.manual_seed(0)
    device = cfg.get("device", "cuda")
    model, inputs = spec.build(cfg["batch"], dtype, device, **cfg.get("sizes", {}))
    train = cfg["mode"] == "train"
    model.train(train)
    import copy
    eager = copy.deepcopy(model)
    variant = torch.compile(model, mode=VARIANT_MODES[cfg["variant"]])

    def loop_of(m, params_of):
        if train:
            opt = torch.optim.SGD(params_of.parameters(), lr=1e-3)

            def loop(n):
                for _ in range(n):
                    params_of.zero_grad(set_to_none=True)
                    m(*inputs).float().mean().backward()
                    opt.step()
            return loop

        def loop(n):
            with torch.no_grad():
                for _ in range(n):
                    m(*inputs)
        return loop
    v_loop, e_loop = loop_of(variant, model), loop_of(eager, eager)

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def window(loop, n):
        sync()
        t0 = time.perf_counter()
        loop(n)
        sync()
        return (time.perf_counter() - t0) * 1e3 / n
    for loop in (v_loop, e_loop):   # warm-up: compile, CUDA graphs, clocks (--warmup-s)
        loop(3)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < cfg.get("warmup_s", 2.0):
            loop(cfg["iters"])
        sync()
    vs, es = [], []
    import gc
    gc.collect()
    gc.disable()
    for i in range(cfg["pairs"]):
        for which in (("v", "e") if i % 2 == 0 else ("e", "v")):
            (vs if which == "v" else es).append(window(v_loop if which == "v" else e_loop, cfg["iters"]))
    gc.enable()
    return {"variant_ms": vs, "eager_ms": es, "speedup": statistics.median(es) / statistics.median(vs),
            "variant_median_ms": statistics.median(vs), "eager_median_ms": statistics.median(es)}


def configurations(config: dict) -> list[dict]:
    """The (model, variant, batch, sizes, mode, dtype) of the config's sweep, variants besides
    eager; batches as the sweep resolves them (plan.runs.batch_sizes: `default` is each
    model's own default batch)."""
    sys.path.insert(0, ROOT)
    from fusionlab.plan import config_schema, runs
    resolved = config_schema.validate(dict(config))
    out = []
    modes = config.get("mode", ["inference"])
    for mode in modes if isinstance(modes, list) else [modes]:
        dtypes = (config.get("dtype_by_mode") or {}).get(mode) or config.get("dtype", ["float32"])
        variants = (config.get("variants_by_mode") or {}).get(mode) or config["variants"]
        for model in config["models"]:
            batches = runs.batch_sizes(resolved, model)
            sizes = (config.get("sizes") or {}).get(model) or {}
            import itertools
            axes = sorted(sizes)
            for combo in itertools.product(*(sizes[a] for a in axes)) if axes else [()]:
                for dtype in dtypes if isinstance(dtypes, list) else [dtypes]:
                    for variant in variants:
                        if variant == "eager":
                            continue
                        for batch in batches:
                            out.append({"model": model, "variant": variant, "batch": batch, "mode": mode,
                                        "dtype": dtype, "sizes": dict(zip(axes, combo))})
    return out


def run(args) -> None:
    import yaml
    with open(args.configfile) as f:
        config = yaml.safe_load(f)
    results = []
    for c in configurations(config):
        c.update(import_models=config.get("import_models") or {}, iters=args.iters, pairs=args.pairs)
        procs = []
        for _ in range(args.processes):
            p = subprocess.run([sys.executable, __file__, "child", json.dumps(c)], capture_output=True, text=True,
                               timeout=args.timeout)
            line = [x for x in p.stdout.splitlines() if x.startswith("{")]
            procs.append(json.loads(line[-1]) if line else {"error": p.stderr[-500:]})
            if not line:   # a configuration that fails fails again: its error once, no more processes
                print(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}",
                      file=sys.stderr, flush=True)
                break
        sp = [p["speedup"] for p in procs if "speedup" in p]
        rec = {k: c[k] for k in ("model", "variant", "batch", "mode", "dtype", "sizes")}
        rec.update(processes=procs, speedups=sp, oracle=statistics.median(sp) if sp else None)
        results.append(rec)
        print(f"{rec['model']} {rec['variant']} bs{rec['batch']} {rec['sizes']}: "
              + (" ".join(f"{x:.3f}" for x in sp) or "failed"), flush=True)
    with open(args.out, "w") as f:
        json.dump({"configurations": results}, f, indent=1)


def compare(args) -> None:
    import pandas as pd
    with open(args.bare) as f:
        bare = json.load(f)["configurations"]
    h = pd.read_csv(args.headline)
    rows = []
    for b in bare:
        d = h[(h["model"] == b["model"]) & (h["variant"] == b["variant"]) & (h["batch"] == b["batch"])
              & (h["mode"] == b["mode"]) & (h["dtype"] == b["dtype"])]
        for k, v in b["sizes"].items():
            d = d[d[k] == v] if k in d else d.iloc[:0]
        if len(d) != 1 or b["oracle"] is None:
            rows.append({"configuration": f"{b['model']} {b['variant']} bs{b['batch']}", "note": "no match"})
            continue
        r = d.iloc[0]
        rows.append({"configuration": f"{b['model']} {b['variant']} {b['mode']} {b['dtype']} bs{b['batch']}"
                     + "".join(f" {k}{v}" for k, v in b["sizes"].items()),
                     "sweep": r["speedup"], "lo": r["speedup_lo"], "hi": r["speedup_hi"], "interval": r["interval"],
                     "oracle": b["oracle"], "oracle_processes": " ".join(f"{x:.3f}" for x in b["speedups"]),
                     "off": r["speedup"] / b["oracle"] - 1,
                     "within_3pct": abs(r["speedup"] / b["oracle"] - 1) <= 0.03,
                     "covered": bool(r["speedup_lo"] <= b["oracle"] <= r["speedup_hi"]),
                     "host_bound": r.get("host_bound"), "kernel_speedup": r.get("kernel_speedup")})
    t = pd.DataFrame(rows)
    pd.set_option("display.width", 250)
    print(t.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    ok = t.dropna(subset=["oracle"]) if "oracle" in t else t.iloc[:0]
    if len(ok):
        print(f"\nwithin 3%: {int(ok['within_3pct'].sum())} of {len(ok)}; interval covers the oracle: "
              f"{int(ok['covered'].sum())} of {len(ok)}")
    if args.csv:
        t.to_csv(args.csv, index=False)


def main(argv=None) -> None:
    if argv is None and len(sys.argv) == 3 and sys.argv[1] == "child":
        print(json.dumps(one_process(json.loads(sys.argv[2]))))
        return
    p = argparse.ArgumentParser(prog="bare_loop_processes.py", description=__doc__.splitlines()[0])
    p.add_argument("step", choices=("run", "compare"))
    p.add_argument("--configfile")
    p.add_argument("--out", default="bare.json")
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--bare")
    p.add_argument("--headline")
    p.add_argument("--csv")
    args = p.parse_args(argv)
    run(args) if args.step == "run" else compare(args)


if __name__ == "__main__":
    main()
