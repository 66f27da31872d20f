"""The source texts' claims measured as the texts measured them, where the sweep's shared
axes do not fit (the `measure` block of a claim in claims.yaml):

- mlp_scaling: the deep MLP's benchmark of 004 7.2.3: `num_steps` x (forward, .mean(),
  backward), no optimizer, synchronized, at dim 256 and batch 256; one axis (num_layers or
  steps) varied over the claim's values in a random order (seeded by the repeat, recorded
  as `order`), the time of each value the median of `trials`;
- matmul_scaling: a dim x dim fp32 matmul over the claim's dims (004 7.2.2), random order;
- lstm_sequence: the LSTM cell written gate by gate, looped over a sequence, against
  nn.LSTM (cuDNN) over the same sequence with the same weights (inference), at each of
  the claim's batches (random order);
- pointwise_chain: relu(x + bias) * scale (001 1.1) in eager against the variant
  (torch.compile: one fused kernel) at each of the claim's sizes, paired windows;
- ncu_traffic: one forward of a model under Nsight Compute, bytes per kernel summed over
  the iteration, cold (caches flushed before each kernel) and steady state (caches kept);
- compile_batches: a variant's speedup over eager on one model at each of several batches,
  paired: eager's and the variant's timing windows alternate in one process (the variant's
  output checked against eager's first, as the runner checks it).

Each repeat is a process of its own (the interval of a ratio or an exponent comes from
repeats across processes), running the claims in a random order (seeded by the repeat,
recorded in claims.json `order`); claims.json records the claims file's sha256 (`claims_sha256`):
the tolerances the page judges by are those fixed before the run. Every timed kind records `cv`, the robust coefficients of
variation of its trials or windows (cv below): a busy host shows there, and no verdict is
read from it.

    python -m fusionlab.bench.claims --claims CLAIMS.yaml --device cuda --repeats 5 \
        [--ncu PATH] --out claims.json
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

KINDS = ("mlp_scaling", "matmul_scaling", "lstm_sequence", "pointwise_chain", "ncu_traffic", "compile_batches")
SEED = 71


def _sync(device):
    import torch
    if device == "cuda":
        torch.cuda.synchronize()


def time_trials(fn, device: str, warmup: int, trials: int) -> list[float]:
    """Wall time of fn() in ms, each of `trials` calls synchronized before and after."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(trials):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        ts.append((time.perf_counter() - t0) * 1e3)
    return ts


def cv(ts: list[float]) -> float:
    """Robust coefficient of variation of the times: interquartile range / 1.349 / median
    (the std / mean of a normal sample; one outlier among ten trials barely moves it);
    0 for fewer than two times."""
    if len(ts) < 2 or statistics.median(ts) <= 0:
        return 0.0
    q1, _, q3 = statistics.quantiles(ts, n=4, method="inclusive")
    return (q3 - q1) / 1.349 / statistics.median(ts)


def shuffled(values: list, seed: int) -> list:
    """The values in a random order drawn from `seed` (the same seed, the same order)."""
    out = list(values)
    random.Random(seed).shuffle(out)
    return out


def mlp_scaling(m: dict, device: str, seed: int = SEED) -> dict:
    """Time of `steps` forward + backward steps of the deep MLP over m['values'] of
    m['axis'], measured in a random order (recorded), reported in the values' order."""
    import torch
    from fusionlab.experiments.models.deep_gelu_mlp import DeepGeluMLP
    order = shuffled(m["values"], seed)
    by = {}
    for v in order:
        layers = v if m["axis"] == "num_layers" else m.get("num_layers", 4)
        steps = v if m["axis"] == "steps" else m.get("steps", 2)
        torch.manual_seed(0)
        model = DeepGeluMLP(m.get("dim", 256), layers).to(device)
        x = torch.randn(m.get("batch", 256), m.get("dim", 256), device=device)

        def run():
            for _ in range(steps):
                model(x).mean().backward()
        ts = time_trials(run, device, m.get("warmup", 3), m.get("trials", 10))
        by[v] = (statistics.median(ts), cv(ts))
    return {"values": list(m["values"]), "ms": [by[v][0] for v in m["values"]], "cv": [by[v][1] for v in m["values"]],
            "order": order, "seed": seed}


def matmul_scaling(m: dict, device: str, seed: int = SEED) -> dict:
    """Time of one dim x dim fp32 matmul over m['values'] (and m['shown']) of dim, in a
    random order (recorded)."""
    import torch
    values = list(m.get("shown", [])) + list(m["values"])
    order = shuffled(values, seed)
    by = {}
    for d in order:
        torch.manual_seed(0)
        a, b = torch.randn(d, d, device=device), torch.randn(d, d, device=device)
        ts = time_trials(lambda: a @ b, device, m.get("warmup", 2), m.get("trials", 5))
        by[d] = (statistics.median(ts), cv(ts))
        del a, b
    return {"values": list(m["values"]), "ms": [by[v][0] for v in m["values"]], "cv": [by[v][1] for v in values],
            "shown": list(m.get("shown", [])), "shown_ms": [by[v][0] for v in m.get("shown", [])],
            "order": order, "seed": seed}


def lstm_sequence(m: dict, device: str, seed: int = SEED) -> dict:
    """The gate-by-gate cell over a sequence against cuDNN's LSTM over it (same weights),
    at each of m['batches'] (or m['batch']) in a random order (recorded): per batch the
    two medians, their ratio and the trials' cv."""
    batches = list(m.get("batches") or [m.get("batch", 1024)])
    order = shuffled(batches, seed)
    by = {b: _lstm_one(m, device, b) for b in order}
    out = {"seq": m["seq"], "batches": batches, "order": order, "seed": seed, "cv": []}
    for k in ("cell_ms", "cudnn_ms", "ratio"):
        out[k] = [by[b][k] for b in batches]
    for b in batches:
        out["cv"] += by[b]["cv"]
    return out


def _lstm_one(m: dict, device: str, b: int) -> dict:
    import torch
    from fusionlab.experiments.models.lstm_cell import LSTMCell
    from fusionlab.experiments.variants.cudnn_lstm import CudnnLSTMStep, eager_matmul_precision
    torch.manual_seed(0)
    t, n, h = m["seq"], m.get("input_size", 1024), m.get("hidden", 1024)
    cell = LSTMCell(n, h).to(device)
    lstm = CudnnLSTMStep(cell).lstm
    x = torch.randn(t, b, n, device=device)
    h0, c0 = torch.zeros(b, h, device=device), torch.zeros(b, h, device=device)

    def gates():
        hh, cc = h0, c0
        for i in range(t):
            hh, cc = cell(x[i], hh, cc)
        return hh

    def cudnn():
        with eager_matmul_precision():
            return lstm(x, (h0[None], c0[None]))[0]

    with torch.no_grad():
        ta = time_trials(gates, device, m.get("warmup", 3), m.get("trials", 10))
        tc = time_trials(cudnn, device, m.get("warmup", 3), m.get("trials", 10))
    a, c = statistics.median(ta), statistics.median(tc)
    return {"cell_ms": a, "cudnn_ms": c, "ratio": a / c, "cv": [cv(ta), cv(tc)]}


def add_relu_mul(x, bias, scale):
    """001 1.1's chain: input + bias -> relu -> * scale (three kernels in eager)."""
    import torch
    return torch.relu(x + bias) * scale


def pointwise_chain(m: dict, device: str, seed: int = SEED) -> dict:
    """add_relu_mul in eager against m['variant'] (compile: torch.compile of it; eager: the
    same function) at each of m['elements'] in a random order (recorded): the output
    checked against eager's, then paired windows; per size eager's median window over the
    variant's."""
    import torch
    sizes = list(m["elements"])
    order = shuffled(sizes, seed)
    by = {}
    for n in order:
        torch._dynamo.reset()
        torch.manual_seed(0)
        x, bias, scale = (torch.randn(n, device=device) for _ in range(3))
        fn = torch.compile(add_relu_mul) if m.get("variant", "compile") == "compile" else add_relu_mul
        with torch.no_grad():
            ok = torch.allclose(fn(x, bias, scale), add_relu_mul(x, bias, scale), rtol=1e-5, atol=1e-6)
            for _ in range(m.get("warmup", 20)):
                fn(x, bias, scale)
                add_relu_mul(x, bias, scale)
            e, v = paired_windows(lambda: add_relu_mul(x, bias, scale), lambda: fn(x, bias, scale), device,
                                  m.get("iters", 100), m.get("windows", 5))
        by[n] = (statistics.median(e), statistics.median(v), ok, cv(e), cv(v))
    return {"elements": sizes, "order": order, "seed": seed,
            "eager_ms": [by[n][0] for n in sizes], "variant_ms": [by[n][1] for n in sizes],
            "ratio": [by[n][0] / by[n][1] for n in sizes], "matches": [by[n][2] for n in sizes],
            "cv": [c for n in sizes for c in by[n][3:]]}


def paired_windows(fa, fb, device: str, iters: int, windows: int) -> tuple[list, list]:
    """ms per iteration of fa and fb in `windows` alternating windows of `iters` iterations
    each (fa's window, then fb's), each window synchronized at both ends."""
    a, b = [], []
    for _ in range(windows):
        for fn, out in ((fa, a), (fb, b)):
            _sync(device)
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            _sync(device)
            out.append((time.perf_counter() - t0) * 1e3 / iters)
    return a, b


def compile_batches(m: dict, device: str) -> dict:
    """The variant's paired speedup over eager on m['model'] at each of m['batches']: per
    batch, a fresh compile (dynamo reset: no shape reused from another batch), the output
    checked against eager's, a warm-up, then alternating windows; the ratio is eager's
    median window over the variant's."""
    import torch
    from fusionlab.experiments.registry import MODELS, VARIANTS
    from fusionlab.runner.check import compare
    dtype = m.get("dtype", "float32")
    out = {"batches": [], "eager_ms": [], "variant_ms": [], "ratio": [], "check": [], "cv": []}
    for batch in m["batches"]:
        torch._dynamo.reset()
        torch.manual_seed(0)
        model, inputs = MODELS[m["model"]].build(batch, getattr(torch, dtype), device)
        model.eval()
        ref = copy.deepcopy(model)    # eager's own copy: a variant may rewrite the model it is given
        with torch.no_grad():
            fn = VARIANTS[m.get("variant", "compile")].apply(
                model, inputs, {"compile_mode": "default", "dtype": dtype, "device": device, "mode": "inference"})
            check = compare(torch, fn(*inputs), ref(*inputs), dtype)
            if not check["passed"]:
                out["check"].append({"batch": batch, **check})
                continue
            for _ in range(m.get("warmup", 50)):
                fn(*inputs)
                ref(*inputs)
            e, v = paired_windows(lambda: ref(*inputs), lambda: fn(*inputs), device,
                                  m.get("iters", 200), m.get("windows", 5))
        out["batches"].append(batch)
        out["eager_ms"].append(statistics.median(e))
        out["variant_ms"].append(statistics.median(v))
        out["ratio"].append(statistics.median(e) / statistics.median(v))
        out["cv"] += [cv(e), cv(v)]
        out["check"].append({"batch": batch, "passed": True, "max_abs_err": check.get("max_abs_err")})
    return out


def ncu_traffic(m: dict, device: str, ncu: str | None, workdir: str) -> dict:
    """DRAM and L2 bytes of one measured iteration under ncu, cold and steady state."""
    from fusionlab.analysis.readers import ncu_report
    from fusionlab.core import ranges
    from fusionlab.analysis.readers.ncu_report import BYTE_METRICS
    if device != "cuda" or not ncu:
        return {"status": "not run", "reason": "no GPU or no Nsight Compute (ncu) here"}
    out = {}
    for state, cache in (("cold", "all"), ("steady", "none")):
        rep = os.path.join(workdir, f"ncu_{state}")
        cmd = [ncu, "--nvtx", "--nvtx-include", f"{ranges.DOMAIN}@{ranges.MEASURE}/", "--replay-mode", "kernel",
               "--cache-control", cache, "--clock-control", "none", "--target-processes", "application-only",
               "--metrics", ",".join(BYTE_METRICS), "--force-overwrite", "-o", rep,
               sys.executable, "-m", "fusionlab.runner", "--model", m["model"], "--variant", m.get("variant", "eager"),
               "--batch", str(m["batch"]), "--mode", m.get("mode", "inference"), "--dtype", m.get("dtype", "float32"),
               "--device", "cuda", "--iters", "1", "--warmup", "5", "--warmup-min-s", "0", "--windows", "0",
               "--profiler", "none", "--out", os.path.join(workdir, f"run_{state}.json")]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=m.get("timeout_s", 600))
        if p.returncode != 0 or not os.path.exists(rep + ".ncu-rep"):
            out[state] = {"status": "failed", "reason": (p.stdout + p.stderr)[-300:]}
            continue
        rows = ncu_report.read(rep + ".ncu-rep")
        s = lambda k: float(sum(r.get(k) or 0 for r in rows))  # noqa: E731
        out[state] = {"status": "ok", "kernels": len(rows), "cache_control": cache,
                      "dram_bytes": s("dram_read_bytes") + s("dram_write_bytes"), "l2_bytes": s("l2_bytes")}
    return out


def measure_once(claims: list[dict], device: str, ncu: str | None, workdir: str, repeat: int) -> dict:
    """Every claim's measure block, once, in this process, the claims in a random order
    seeded by the repeat (recorded under "_order"; ncu_traffic on repeat 0 only)."""
    out = {}
    seed = SEED + repeat
    claims = shuffled(claims, seed)
    out["_order"] = {"seed": seed, "claims": [c["id"] for c in claims if c.get("measure")]}
    for c in claims:
        m = c.get("measure")
        if not m or (c.get("needs") == "gpu" and device != "cuda"):
            continue
        if m["kind"] == "ncu_traffic":
            if repeat == 0:
                out[c["id"]] = ncu_traffic(m, device, ncu, workdir)
        elif m["kind"] in ("mlp_scaling", "matmul_scaling", "lstm_sequence", "pointwise_chain"):
            out[c["id"]] = MEASURES[m["kind"]](m, device, seed)
        elif m["kind"] == "compile_batches":
            out[c["id"]] = compile_batches(m, device)
    return out


MEASURES = {"mlp_scaling": mlp_scaling, "matmul_scaling": matmul_scaling, "lstm_sequence": lstm_sequence,
            "pointwise_chain": pointwise_chain}


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load(path: str) -> list[dict]:
    with open(path) as f:
        claims = yaml.safe_load(f)["claims"]
    for c in claims:
        if c.get("measure") and c["measure"].get("kind") not in KINDS:
            raise ValueError(f"claim {c['id']!r}: measure.kind must be one of {', '.join(KINDS)}")
    return claims


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--claims", required=True)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--ncu", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)   # one repeat, this process
    a = p.parse_args(argv)
    try:
        claims = load(a.claims)
    except (OSError, ValueError, KeyError, yaml.YAMLError) as e:
        print(f"fusionlab.bench.claims: {e}", file=sys.stderr)
        return 2
    if a.one is not None:
        rec = measure_once(claims, a.device, a.ncu, os.path.dirname(os.path.abspath(a.out)), a.one)
        with open(a.out, "w") as f:   # written once measured: a repeat that fails leaves no file
            json.dump(rec, f)
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    result = {"device": a.device, "repeats": a.repeats, "gpu": None, "claims_sha256": sha256(a.claims),
              "order": [], "claims": {}}
    if a.device == "cuda":
        import torch
        result["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(a.out))) as tmp:
        for r in range(a.repeats):
            one = os.path.join(tmp, f"r{r}.json")
            cmd = [sys.executable, "-m", "fusionlab.bench.claims", "--claims", a.claims, "--device", a.device,
                   "--out", one, "--one", str(r)] + (["--ncu", a.ncu] if a.ncu else [])
            rc = subprocess.run(cmd).returncode
            if rc != 0 or not os.path.exists(one):
                print(f"fusionlab.bench.claims: repeat {r} failed (exit status {rc})", file=sys.stderr)
                continue
            with open(one) as f:
                rec = json.load(f)
            result["order"].append(rec.pop("_order", None))
            for cid, r1 in rec.items():
                result["claims"].setdefault(cid, []).append(r1)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
