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

# not in ALL: one iteration after MEASURE, in an eager run's traced process only, whose ops
# each run in a range of OP_DOMAIN named by the op (runner.op_record; analysis.run.attribution)
ATTRIBUTE = "attribute"
OP_DOMAIN = "fusionlab.op"


def op_label(op: str) -> str:
    """Label of an op's range in a torch.profiler trace (OP_DOMAIN's, as torch_label)."""
    return f"{OP_DOMAIN}:{op}"

# not in ALL: the training loop's own parts, each a range in DOMAIN around it inside every
# traced iteration (and the op record's), in the profiled process only; never in the untimed
# windows (runner.timing.train_iteration's `rng`; analysis.run.attribution's loop parts)
ZERO_GRAD = "zero_grad"            # model.zero_grad(set_to_none=True): launches nothing
LOSS = "loss"                      # the loss from the model's output(s), not its backward
OPTIMIZER_STEP = "optimizer_step"  # optimizer.step()
LOOP = (ZERO_GRAD, LOSS, OPTIMIZER_STEP)
