"""Fusion map: what each kernel computes, from its name.

- Inductor names kernels after the aten ops they fuse: triton_{poi,red,per,tem}_fused_
  <op>_<op>..._<n> (pointwise, reduction, persistent reduction, template) and
  cpp_fused_<ops>_<n> on the CPU. The op list is split greedily against the aten op
  names below (op names contain underscores).
- Eager CUDA kernels carry their aten op in the demangled name (sin_kernel_cuda,
  GeluCUDAKernelImpl, MulFunctor, ...); cuBLAS/CUTLASS kernels are matmuls.
- On the CPU backend a kernel is an aten operator (aten::add) already.
Names nothing here recognises keep kind "other" and their short name, never a guess.

kernel_diff() compares two runs kernel by kernel, classed as HTA's TraceDiff does:
added, deleted, increased, decreased, unchanged.
"""
from __future__ import annotations

import re

import pandas as pd

INDUCTOR = re.compile(r"^(?:graph_\d+_)?(triton|cpp)_(?:(poi|red|per|tem)_)?fused_?(.*?)(?:_\d+)?$")
INDUCTOR_KIND = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction",
                 "tem": "template", None: "cpp"}
# aten op names with underscores, longest first, for splitting fused names
MULTI = sorted({
    "native_layer_norm", "native_batch_norm", "native_group_norm", "_native_batch_norm_legit",
    "_native_batch_norm_legit_no_training", "_softmax", "_log_softmax", "_softmax_backward_data",
    "threshold_backward", "gelu_backward", "sigmoid_backward", "tanh_backward", "var_mean",
    "max_pool2d_with_indices", "avg_pool2d", "_to_copy", "addmm", "as_strided", "layer_norm",
    "batch_norm", "scaled_dot_product", "_scaled_dot_product_flash_attention", "rsub",
    "native_dropout", "constant_pad_nd", "embedding_dense_backward", "index_select",
    "sum", "mean", "amax", "amin", "max", "min", "where", "clone", "cat", "full", "lift_fresh_copy",
}, key=lambda s: -s.count("_"))

EAGER = [  # (pattern on the demangled name, aten op or None: the pattern's group)
    (re.compile(r"fprop|dgrad|wgrad|implicit_convolve|winograd|conv2d|convolution", re.I), "convolution"),
    (re.compile(r"flash|fmha|attention", re.I), "attention"),
    (re.compile(r"gemm|gemv|cutlass|cublas|Kernel2|dot_kernel|splitKreduce", re.I), "mm"),
    (re.compile(r"lstm|rnn", re.I), "lstm"),
    (re.compile(r"direct_copy|copy_kernel|CatArrayBatchedCopy"), "copy"),
    (re.compile(r"distribution_|normal_kernel|uniform_kernel"), "random"),
    (re.compile(r"GeluCUDAKernelImpl|gelu", re.I), "gelu"),
    (re.compile(r"softmax", re.I), "softmax"),
    (re.compile(r"layer_norm|LayerNorm"), "layer_norm"),
    (re.compile(r"batch_norm|BatchNorm"), "batch_norm"),
    (re.compile(r"max_pool|MaxPool"), "max_pool2d"),
    (re.compile(r"launch_clamp_scalar|clamp_kernel"), "clamp"),
    (re.compile(r"([a-z][a-z0-9]*?)_kernel_cuda"), None),
    (re.compile(r"binary_internal::(\w+?)Functor"), None),
    (re.compile(r"CUDAFunctor(?:OnSelf)?_(\w+?)<"), None),
    (re.compile(r"at::native::(?:\w+::)?([A-Z]\w*?)Functor<"), None),
    (re.compile(r"FillFunctor|fill_kernel"), "fill"),
    (re.compile(r"reduce_kernel"), "reduction"),
]


def split_ops(fused: str) -> list[str]:
    """'add_relu' -> [add, relu]; '_softmax_add' -> [_softmax, add]."""
    ops, rest = [], fused
    while rest:
        op = next((m for m in MULTI if rest == m or rest.startswith(m + "_")), None) or rest.split("_", 1)[0]
        if not op:              # a separator underscore
            rest = rest[1:]
            continue
        ops.append(op)
        rest = rest[len(op):].removeprefix("_")
    return ops


def classify(name: str, full_name: str | None = None) -> tuple[str, list[str]]:
    """(kind, ops) of one kernel."""
    m = INDUCTOR.match(name or "")
    if m:
        return INDUCTOR_KIND[m.group(2)] if m.group(1) == "triton" else "cpp", split_ops(m.group(3))
    if name and name.startswith("aten::"):
        return "aten", [name[6:]]
    text = full_name or name or ""
    for pat, op in EAGER:
        hit = pat.search(text)
        if hit:
            if op is None:
                op = next((g for g in hit.groups() if g), None)
                if not op:
                    continue
                op = re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()
                op = {"binary": "add"}.get(op, op)
            kind = "library" if op in ("mm", "convolution", "attention", "lstm") else "eager"
            return kind, [op]
    return "other", [name or "?"]


def annotate(kernels: pd.DataFrame) -> pd.DataFrame:
    """Add kind, ops ('+'-joined) and n_ops to a kernel table."""
    k = kernels.copy()
    parsed = [classify(n, f) for n, f in zip(k["name"], k.get("full_name", k["name"]))]
    k["kind"] = [p[0] for p in parsed]
    k["ops"] = ["+".join(p[1]) for p in parsed]
    k["n_ops"] = [len(p[1]) for p in parsed]
    return k


def kernel_diff(a: pd.DataFrame, b: pd.DataFrame, tol: float = 0.05) -> pd.DataFrame:
    """Kernel-by-kernel diff of two kernel tables (per-iteration calls and time)."""
    cols = ["calls_per_iter", "time_per_iter_us"]
    key = "full_name" if "full_name" in a and "full_name" in b else "name"
    m = a.groupby(key)[cols].sum().merge(b.groupby(key)[cols].sum(), how="outer", left_index=True,
                                         right_index=True, suffixes=("_a", "_b")).fillna(0.0)

    def cls(r):
        if r.calls_per_iter_a == 0:
            return "added"
        if r.calls_per_iter_b == 0:
            return "deleted"
        d = r.time_per_iter_us_b - r.time_per_iter_us_a
        if abs(d) <= tol * r.time_per_iter_us_a:
            return "unchanged"
        return "increased" if d > 0 else "decreased"

    m["class"] = [cls(r) for r in m.itertuples()]
    m["delta_us"] = m["time_per_iter_us_b"] - m["time_per_iter_us_a"]
    return m.reset_index().sort_values("delta_us", key=abs, ascending=False, ignore_index=True)
