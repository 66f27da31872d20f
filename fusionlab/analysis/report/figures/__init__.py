"""The figures of a sweep as data, without matplotlib (the Snakefile builds its DAG from
this): name -> (scope, report category). Scope `model`: one file per swept model;
`sweep`: one file for all. The modules of this package draw them (one per family of
figures, each a function (tables, model) -> matplotlib figure); report.plots binds each
name to its function and renders it from the written tables."""
from __future__ import annotations

FIGURES = {
    "speedup_vs_batch": ("model", "1. Speedup"),
    "speedup_breakdown": ("model", "1. Speedup"),
    "kernels_per_iter": ("model", "2. Kernels and fusion"),
    "kernel_durations": ("model", "2. Kernels and fusion"),
    "over_fusion": ("sweep", "2. Kernels and fusion"),
    "launch_overhead": ("model", "3. Launch overhead and idle time"),
    "idle_breakdown": ("model", "3. Launch overhead and idle time"),
    "roofline": ("sweep", "4. Roofline"),
    "crossover": ("sweep", "5. Crossover"),
    "compile_cost": ("sweep", "6. Compile cost"),
    "profiler_overhead": ("sweep", "7. Measurement"),
    "scaling": ("model", "8. Scaling"),
}
