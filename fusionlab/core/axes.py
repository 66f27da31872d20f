"""The values of the sweep's fixed axes, defined once (config schema, runner, Snakefile
wildcards, kernels and tools all read them from here)."""

DTYPES = ("float32", "bfloat16", "float16")
MODES = ("inference", "train")
PROFILERS = ("nsys", "torch", "none")   # what wraps one run; the sweep picks nsys or torch
