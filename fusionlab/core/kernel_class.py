"""A GPU kernel's class (what kind of work it does) and the precision its name states.

Classes, tried in this order (CLASSES; first match wins):

- attention:               fused attention kernels (flash, fmha, cuDNN's SDPA and its
                           backward's helpers)
- matmul/convolution:      GEMMs and convolutions, their epilogues included (a GEMM with a
                           fused bias or activation): cuBLAS (nvjet, cutlass Kernel2, gemm, gemv),
                           cuDNN (xmma fprop/dgrad/wgrad, implicit gemm), Inductor's
                           templates (triton_tem_)
- copies:                  layout and dtype copies, concatenation, gather/scatter, memcpy
                           and memset: an Inductor pointwise kernel whose fused ops are only
                           copies and views counts here
- reduction/normalisation: reductions, norms, softmax, scans; Inductor's triton_red_ and
                           triton_per_ kernels
- elementwise:             pointwise kernels (ATen's elementwise kernels, Inductor's
                           triton_poi_, the optimizer's multi_tensor_apply, dropout)
- other:                   anything else

The name is the kernel's short name; the full (demangled) name is matched too where given.
"""
from __future__ import annotations

import re

ATTENTION = "attention"
MATMUL = "matmul/convolution"
COPIES = "copies"
REDUCTION = "reduction/normalisation"
ELEMENTWISE = "elementwise"
OTHER = "other"
CLASSES = (ATTENTION, MATMUL, COPIES, REDUCTION, ELEMENTWISE, OTHER)
MMA_CLASSES = (ATTENTION, MATMUL)   # the classes whose kernels run matrix products on tensor cores

_LIBRARY = (
    (ATTENTION, re.compile(r"flash|fmha|sdpa|attention|_attn|dot_do_o|convert_dq", re.I)),
    (MATMUL, re.compile(r"gemm|gemv|cutlass|xmma|nvjet|cublas|wgmma|s16816|s1688|fprop|dgrad|wgrad|"
                        r"conv(?!ert)|^Kernel2?$", re.I)),
    (COPIES, re.compile(r"copy|memcpy|memset|nchwToNhwc|nhwcToNchw|CatArray|transpose|AddPadding|"
                        r"gather|scatter|index_|indexing|embedding", re.I)),
    (REDUCTION, re.compile(r"norm|reduce|softmax|welford|scan|GammaBeta|_sum_|argmax|topk|sort", re.I)),
    (ELEMENTWISE, re.compile(r"elementwise|multi_tensor_apply|dropout|activation|relu|gelu|silu|"
                             r"distribution|fill|pool", re.I)),
)
_INDUCTOR = re.compile(r"^triton_(poi|red|per|tem)_")
# the ops of an Inductor pointwise kernel that only moves data
_COPY_ONLY = re.compile(r"^triton_poi_fused_((?:_to_copy|to_copy|clone|cat|view|_unsafe_view|transpose|permute|"
                        r"copy_|copy|expand|slice|select|unsqueeze|squeeze|t|constant_pad_nd)_?)+_?\d*$")


def kernel_class(name: str, full_name: str = "") -> str:
    """The class (one of CLASSES) of a kernel by its short name and full name."""
    name = str(name)
    m = _INDUCTOR.match(name)
    if m:
        kind = m.group(1)
        if kind == "tem":
            return MATMUL
        if kind in ("red", "per"):
            return REDUCTION
        return COPIES if _COPY_ONLY.match(name) else ELEMENTWISE
    for text in (name, str(full_name or "")):
        for cls, pat in _LIBRARY:
            if pat.search(text):
                return cls
    return OTHER


_PRECISION = (
    ("bf16", re.compile(r"bf16|bfloat16|BFloat16|__nv_bfloat16")),
    ("fp16", re.compile(r"(?<!b)f16|fp16|half|Half|__half|h884|h1688|h16816")),
    ("tf32", re.compile(r"tf32", re.I)),
    ("fp32", re.compile(r"(?<![bt])f32|fp32|float(?!\d)|sgemm|s1688gemm_f32")),
    ("fp64", re.compile(r"f64|double|dgemm")),
)


def precision(name: str, full_name: str = "") -> str:
    """The precision a kernel's name states for its inputs (bf16, fp16, tf32, fp32, fp64),
    the first found in the full name, then the short name; "" where neither says."""
    for text in (str(full_name or ""), str(name)):
        for label, pat in _PRECISION:
            if pat.search(text):
                return label
    return ""
