"""A run's sizes besides batch: the model's own build arguments (dim, num_layers, hidden,
...) that a sweep may vary, and their two spellings.

- label:  "default" (every size at the model's default) or the sizes that differ from the
          defaults, sorted by name, as name+value joined by '-': "dim1024-num_layers8".
          It is the `size` column of the tables and run.json, and the runner's --size.
- suffix: the label as the run folder carries it after the batch: "" for the defaults,
          else "-" + label ("bs256-dim1024-num_layers8"). One experiment has one folder,
          whichever sweep asked for it.

Axis names are lowercase letters and underscores (no digits), values positive integers,
so both spellings are shell-safe and parse back unambiguously.
"""
from __future__ import annotations

import re

DEFAULT = "default"
# the columns of the run and kernel tables besides the size axes (a run's record, its
# metrics, each kernel's row): a size axis joins those tables as a column of its own name,
# so an axis of one of these names would be read as the column it shadows (kernels' `ops`:
# the ops a kernel runs)
TABLE_COLUMNS = frozenset({
    "achieved_flops", "achieved_occupancy_pct", "arithmetic_intensity", "attribution", "backend",
    "batch", "block_threads", "bound", "bytes_fused", "bytes_regime", "bytes_replay",
    "bytes_source", "bytes_unfused", "calls", "calls_per_iter", "cold_iterations", "cold_replay",
    "compile_cache", "compile_latency_s", "copy_bandwidth_frac", "copy_bandwidth_frac_measured",
    "correct", "cost_error", "cost_method", "cpu_kernel_time_per_iter_ms",
    "cuda_event_time_per_iter_ms", "device", "dram_bytes", "dram_bytes_cold", "dram_bytes_cold_max",
    "dram_bytes_cold_min", "dram_bytes_high", "dram_bytes_low", "dram_bytes_measured",
    "dram_bytes_measured_selected", "dram_bytes_steady_max", "dram_bytes_steady_max_selected",
    "dram_bytes_steady_min", "dram_bytes_steady_min_selected", "dram_over_fused",
    "dram_over_unfused", "dram_pct_peak", "dram_read_bytes", "dram_read_bytes_cold",
    "dram_read_bytes_measured", "dram_read_bytes_measured_selected", "dram_write_bytes",
    "dram_write_bytes_cold", "dram_write_bytes_measured", "dram_write_bytes_measured_selected",
    "dtype", "duration_ms", "dynamic_smem_bytes", "flops", "flops_frac", "flops_measured",
    "flops_measured_over_model", "flops_measured_selected", "flops_pointwise", "flops_tensor",
    "full_name", "fusion_source", "fx_nodes", "gate_roots", "gate_stopped", "generated_kernels",
    "gpu", "gpu_busy_fraction", "gpu_busy_per_iter_ms", "gpu_other_work_frac",
    "gpu_span_per_iter_ms", "gpu_time_per_iter_ms", "graph_breaks", "grid_blocks",
    "harness_us_per_iter", "host", "host_busy_cores_max", "host_probe_cv",
    "host_probe_ms", "host_slowdown", "idle_host_wait_frac", "idle_host_wait_per_iter_ms",
    "idle_kernel_wait_frac", "idle_kernel_wait_per_iter_ms", "idle_other_frac",
    "idle_other_per_iter_ms", "image", "injected_wall_time_per_iter_ms", "injection_overhead",
    "iteration_dram_bytes_measured", "iteration_ncu_time_us", "iterations", "kernel_time_ms",
    "kernels", "kernels_csv_us", "kernels_per_iter", "kind", "launch_api_time_ms", "launch_api_us",
    "launch_calls", "launch_calls_per_iter", "launch_delay_us", "launch_overhead_ratio",
    "local_bytes", "local_bytes_measured", "local_bytes_measured_selected",
    "local_mem_per_thread_bytes", "max_abs_err", "measure_iters", "measured_intensity",
    "median_kernel_us", "median_us", "metrics_us", "mode", "model", "n_ops", "name",
    "ncu_calls_per_iter", "ncu_kernel_count_selected", "ncu_kernel_time_us",
    "ncu_kernel_time_us_selected", "ncu_kernels_per_iter", "ncu_kernels_per_iter_selected",
    "ncu_kernels_selected", "ncu_note", "ncu_over_nsys_time", "ncu_status",
    "ncu_time_share_selected", "ncu_time_us", "nsys", "occupancy_limited_by", "ops",
    "ops_source", "paired_eager_error", "paired_host_sensitive", "paired_speedup",
    "paired_speedup_fast_host", "paired_speedup_slow_host", "paired_stop", "peak_memory_bytes",
    "profiler_overhead", "profiler_version", "queue_us", "reason", "registers_per_thread", "repeat",
    "roof_tensor_flops", "roofline_time_us", "run", "runner_wall_time_per_iter_ms",
    "short_kernel_share", "size", "size_axes", "sm_pct_peak", "static_smem_bytes", "status",
    "steady_iterations", "tensor_flops_source", "theoretical_occupancy", "time_per_iter_us",
    "torch", "total_us", "traced_wall_time_per_iter_ms", "untraced_cpus",
    "untraced_last_probe_ratio", "untraced_last_window_ratio", "untraced_wall_cv",
    "untraced_wall_time_per_iter_ms", "variant", "wall_time_per_iter_ms", "windows_disturbed_kept",
    "windows_retimed", "working_set_bytes",
})
NAME = re.compile(r"^[a-z][a-z_]*$")
_PART = re.compile(r"([a-z][a-z_]*?)([0-9]+)")
SUFFIX_PATTERN = r"(-[a-z][a-z_]*[0-9]+)*"   # the Snakemake wildcard constraint


def label(values: dict, defaults: dict) -> str:
    """The label of `values` (axis -> int) for a model whose defaults are `defaults` (a
    default of None, not known, is no value's: the label names the axis)."""
    diff = {k: int(v) for k, v in values.items() if defaults[k] is None or int(v) != int(defaults[k])}
    return "-".join(f"{k}{v}" for k, v in sorted(diff.items())) or DEFAULT


def parse(text: str) -> dict:
    """axis -> value from a label or a suffix ("default" and "" give {}). ValueError if
    it is neither."""
    text = text.lstrip("-")
    if text in ("", DEFAULT):
        return {}
    out = {}
    for part in text.split("-"):
        m = _PART.fullmatch(part)
        if not m:
            raise ValueError(f"size {text!r}: {part!r} is not a name followed by an integer "
                             "(e.g. dim1024-num_layers8, or default)")
        out[m.group(1)] = int(m.group(2))
    return out


def suffix(lbl: str) -> str:
    return "" if lbl in ("", DEFAULT) else "-" + lbl


def from_suffix(sfx: str) -> str:
    return sfx.lstrip("-") or DEFAULT
