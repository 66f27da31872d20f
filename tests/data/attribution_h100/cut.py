"""Cuts this fixture from a results folder of config/host-gate-real.yaml (one H100, torch
2.11): five runs of tables/attribution.csv summed by module path, source line (file name
and line) and rule (table.csv.gz), and each run's kernel time per iteration as
kernels.csv and metrics.json state it (runs.csv).

    python tests/data/attribution_h100/cut.py RESULTS"""
import json
import os
import sys

import pandas as pd

RUNS = ["bert/eager/inference_bfloat16/bs16-seq512/r0", "bert/compile/inference_bfloat16/bs16-seq512/r0",
        "bert/compile/inference_bfloat16/bs16-seq512/r1", "gpt2/eager/inference_bfloat16/bs8-seq512/r0",
        "gpt2/compile/inference_bfloat16/bs8-seq512/r1"]
KEYS = ["run", "model", "variant", "batch", "size", "mode", "dtype", "repeat", "backend", "device", "module",
        "source", "rule"]


def main(results: str, out: str) -> None:
    t = pd.read_csv(os.path.join(results, "tables", "attribution.csv"), keep_default_na=False)
    t = t[t["run"].isin(["nsys/" + r for r in RUNS])].copy()
    t["source"] = t["source"].map(lambda s: s.rsplit("/", 1)[-1])
    t.groupby(KEYS, as_index=False, sort=False)["time_us"].sum().to_csv(
        os.path.join(out, "table.csv.gz"), index=False, compression={"method": "gzip", "mtime": 0})
    rows = []
    for r in RUNS:
        d = os.path.join(results, "runs", "nsys", r)
        metrics = json.load(open(os.path.join(d, "metrics.json")))
        rows.append({"run": "nsys/" + r,
                     "kernels_csv_us": pd.read_csv(os.path.join(d, "kernels.csv"))["time_per_iter_us"].sum(),
                     "metrics_us": metrics["kernel_time_ms"] * 1e3 / metrics["measure_iters"]})
    pd.DataFrame(rows).to_csv(os.path.join(out, "runs.csv"), index=False)


if __name__ == "__main__":
    main(sys.argv[1], os.path.dirname(os.path.abspath(__file__)))
