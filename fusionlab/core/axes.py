"""The values of the sweep's fixed axes, defined once (config schema, runner, Snakefile
wildcards, kernels and tools all read them from here)."""

TENSOR_DTYPES = ("float32", "bfloat16", "float16")   # weights and inputs built in that dtype
# mixed precision as training runs it: float32 weights and inputs, the forward under
# torch.autocast(bfloat16)
AUTOCAST = {"amp_bfloat16": "bfloat16"}
DTYPES = TENSOR_DTYPES + tuple(AUTOCAST)   # a run's dtype axis


def weights_dtype(dtype: str) -> str:
    """The dtype a run's weights and inputs are built in (float32 under autocast)."""
    return "float32" if dtype in AUTOCAST else dtype


def compute_dtype(dtype: str) -> str:
    """The dtype a run's matmuls and convolutions compute in (autocast's for amp_*)."""
    return AUTOCAST.get(dtype, dtype)
MODES = ("inference", "train")
PROFILERS = ("nsys", "torch", "none")   # what wraps one run; the sweep picks nsys or torch


def run_keys(run_dir: str) -> dict | None:
    """A run folder's keys from its path (backend/model/variant/mode_dtype/bs<batch><size>/r<repeat>,
    the sweep's run pattern), for a run whose own files cannot be read; None for another path."""
    import os
    import re
    parts = os.path.normpath(os.path.abspath(run_dir)).split(os.sep)[-6:]
    if len(parts) < 6:
        return None
    model, variant, mode_dtype, bs, rep = parts[1:]
    mode, _, dtype = mode_dtype.partition("_")
    m, r = re.fullmatch(r"bs([0-9]+)(-.*)?", bs), re.fullmatch(r"r([0-9]+)", rep)
    if not (m and r and mode in MODES and dtype in DTYPES):
        return None
    return {"backend": parts[0], "model": model, "variant": variant, "batch": int(m.group(1)),
            "size": (m.group(2) or "").lstrip("-") or "default", "mode": mode, "dtype": dtype,
            "repeat": int(r.group(1))}
