"""The cost of keeping Inductor's provenance and fusion log (runner.introspect.CompileLogs)
on compile latency: each model compiled in a fresh runner process with the logs on and off
(FUSIONLAB_INDUCTOR_LOGS=0), cold (an empty Inductor cache) and cached (the same cache
again), alternating, `--reps` times; prints the runs and the medians of run.json's
compile_latency_s (first call minus eager's first call). `--mode train` compiles a forward
and a backward graph (the backward at the first backward call, inside the first call's time).

    PYTHONPATH=$PWD python benchmarks/provenance_cost.py --models mlp transformer_block --reps 3
    PYTHONPATH=$PWD python benchmarks/provenance_cost.py --mode train --reps 3
    PYTHONPATH=$PWD python benchmarks/provenance_cost.py --device cuda --reps 2   # a GPU machine
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def one(model: str, logs: bool, cache: str, out: str, mode: str = "inference", device: str = "cpu") -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "FUSIONLAB_INDUCTOR_LOGS": "1" if logs else "0"}
    env.pop("TRITON_CACHE_DIR", None)   # Triton's cache inside Inductor's: cold means both empty
    subprocess.run([sys.executable, "-m", "fusionlab.runner", "--model", model, "--variant", "compile",
                    "--mode", mode, "--batch", "4", "--warmup", "1", "--iters", "2", "--windows", "1", "--device", device,
                    "--out", out], env=env, check=True, capture_output=True)
    rec = json.load(open(out))
    if rec.get("status") != "ok":
        sys.exit(f"{model} (logs {'on' if logs else 'off'}): the runner ended {rec.get('status')}: {rec.get('reason')}")
    return {"compile_latency_s": rec["compile_latency_s"], "hits": rec["compile"]["fx_graph_cache_hits"]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--models", nargs="+", default=["mlp", "transformer_block"])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--mode", default="inference", choices=["inference", "train"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            for model in a.models:
                for logs in (True, False):
                    cache = os.path.join(tmp, f"cache_{rep}_{model}_{logs}")
                    for state in ("cold", "cached"):
                        r = one(model, logs, cache, os.path.join(tmp, "run.json"), a.mode, a.device)
                        rows.append({"model": model, "logs": logs, "state": state, **r})
                        print(json.dumps(rows[-1]), flush=True)
    print("\nmodel state logs median_compile_latency_s")
    for model in a.models:
        for state in ("cold", "cached"):
            for logs in (True, False):
                v = [r["compile_latency_s"] for r in rows
                     if (r["model"], r["state"], r["logs"]) == (model, state, logs)]
                print(model, state, "on" if logs else "off", f"{statistics.median(v):.3f}")


if __name__ == "__main__":
    main()
