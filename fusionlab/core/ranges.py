"""The NVTX contract: domain and range names, defined once.

The runner emits these ranges (through the `nvtx` package, and as
torch.profiler.record_function labels for the torch backend); the analysis reads
them back. Nothing else in the project spells these strings.
"""

DOMAIN = "fusionlab"

BUILD = "build"          # model and input construction
CHECK = "check"          # correctness check against eager
WARMUP = "warmup"        # warm-up iterations (compilation happens here)
MEASURE = "measure"      # the measured region: all metrics are taken inside it
ITERATION = "iteration"  # one measured iteration, nested in MEASURE

ALL = (BUILD, CHECK, WARMUP, MEASURE, ITERATION)


def torch_label(name: str) -> str:
    """Label of a range in a torch.profiler trace (record_function has no domains)."""
    return f"{DOMAIN}:{name}"
