"""The figures of a sweep as data, without matplotlib (the Snakefile builds its DAG from
this): name -> (scope, report category). Scope `model`: one file per swept model;
`sweep`: one file for all. analysis.plots binds each name to the function that draws it.

variant_colour(): one fixed colour per variant, the same in every figure, from the
variant's place in the catalog (the variant names of experiments/catalog.json, sorted, as
experiments.catalog.variant_names() gives them; read as data: analysis never imports
experiments); eager is always black."""
from __future__ import annotations

import zlib

from fusionlab.analysis.sweep import registry_data

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

# tab10, then the dark tab20b/tab20c shades: no pale colour (eager is black)
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
           "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#9c9ede"]
EAGER_COLOUR = "#000000"


def variant_colour(variant: str) -> str:
    if variant == "eager":
        return EAGER_COLOUR
    names = [v for v in registry_data.variant_names() if v != "eager"]
    if variant in names:
        return PALETTE[names.index(variant) % len(PALETTE)]
    return PALETTE[zlib.crc32(str(variant).encode()) % len(PALETTE)]   # not in the catalog: stable too
