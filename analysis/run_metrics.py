"""Metrics of one run: run.json (what the runner recorded) + its profile -> metrics.json,
and the run's kernels in the measured range -> kernels.csv (analysis.metrics.kernel_table,
annotated with analysis.fusion: the fusion map).

A run whose experiment failed keeps its status and reason; a profile that cannot be
read turns the run's status to `error` with the one-line reason. Neither raises, so
the analysis of the other runs goes on.
"""
from __future__ import annotations

import json
import os

import pandas as pd

from analysis import fusion, metrics, nsys_sqlite, torch_trace
from analysis.trace import ReportError
from experiments import ranges as R
from experiments.run import atomic_path, write_json_atomic

KEYS = ("model", "variant", "batch", "mode", "dtype", "repeat")


def load_profile(path: str):
    """A Trace from an nsys SQLite export or a torch.profiler Chrome trace."""
    if path.endswith((".sqlite", ".db")):
        return nsys_sqlite.load(path)
    if path.endswith(".json"):
        return torch_trace.load(path)
    raise ReportError(f"{path}: unknown profile type (expected .sqlite or a torch trace .json)")


def compute(run_json: str, profile: str | None, backend: str) -> tuple[dict, pd.DataFrame]:
    with open(run_json) as f:
        run = json.load(f)
    row = {k: run.get(k) for k in KEYS}
    row.update(backend=backend, device=run.get("device"), status=run.get("status", "error"),
               reason=run.get("reason"), gpu=run.get("gpu"),
               torch=(run.get("versions") or {}).get("torch"),
               nsys=(run.get("versions") or {}).get("nsys"),
               correct=(run.get("correctness") or {}).get("passed"),
               max_abs_err=(run.get("correctness") or {}).get("max_abs_err"),
               compile_latency_s=run.get("compile_latency_s"),
               peak_memory_bytes=run.get("peak_memory_bytes"),
               runner_wall_time_per_iter_ms=(run.get("timing") or {}).get("wall_time_per_iter_ms"),
               cuda_event_time_per_iter_ms=(run.get("timing") or {}).get("cuda_event_time_per_iter_ms"),
               measure_iters=run.get("measure_iters"),
               graph_breaks=(run.get("compile") or {}).get("graph_breaks"),
               generated_kernels=(run.get("compile") or {}).get("generated_kernels"))
    kernels = pd.DataFrame()
    if row["status"] != "ok" or profile is None:
        return row, kernels
    try:
        trace = load_profile(profile)
        m = metrics.range_metrics(trace, R.MEASURE)
        if not m.get("instances"):
            raise ReportError(f"{profile}: no '{R.DOMAIN}:{R.MEASURE}' NVTX range in the profile")
    except ReportError as e:
        row.update(status="error", reason=str(e))
        return row, kernels
    row.update({k: v for k, v in m.items() if k not in ("range", "domain", "instances")})
    row["profiler_version"] = trace.tool_version
    kernels = fusion.annotate(metrics.kernel_table(trace))
    return metrics.clean(row), kernels


KERNEL_FILE_COLUMNS = ["name", "kind", "ops", "n_ops", "calls_per_iter", "time_per_iter_us",
                       "median_us", "calls", "total_us", "full_name"]


def main(run_json: str, profile: str | None, backend: str, out: str, kernels_out: str | None = None) -> dict:
    row, kernels = compute(run_json, profile if profile and os.path.exists(profile) else None, backend)
    if kernels_out:
        with atomic_path(kernels_out) as tmp:
            kernels.reindex(columns=KERNEL_FILE_COLUMNS).to_csv(tmp, index=False)
    write_json_atomic(out, row)
    return row
