"""A GPU kernel's class (what kind of work it does) and the precision its name states.

Each class is one record in RECORDS (KernelClass): its name (the `kernel_class` column's
value), its colour in every figure, whether Nsight Compute's reader counts its kernels'
tensor-pipe instructions as FLOPs (`mma`: the kernels run matrix products on tensor
cores), its matching rule and what it holds. The classifier (kernel_class), the
figures' colour table (COLOURS), the tables' class order (CLASSES) and the docs' class
table (docs/outputs.md, `python -m fusionlab.core.kernel_class`) are all read from the
records. A new class is one new record.

Matching: an Inductor kernel (triton_poi_, triton_red_, triton_per_, triton_tem_) takes
the first class whose `inductor` pattern matches its name from the start; any other
kernel the first class whose `library` pattern (case-insensitive) is found in its short
name, then in its full (demangled) name where given; the last record (`other`, with no
rule) takes what no rule matches. The order of RECORDS is the order rules are tried.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

ATTENTION = "attention"
MATMUL = "matmul/convolution"
COPIES = "copies"
REDUCTION = "reduction/normalisation"
ELEMENTWISE = "elementwise"
OTHER = "other"


@dataclass(frozen=True)
class KernelClass:
    name: str
    colour: str               # its colour in every figure (kernel_classes, timeline)
    mma: bool                 # its kernels run matrix products: tensor instructions count as FLOPs
    library: str              # searched (case-insensitive) in a library kernel's short, then full name; "": none
    inductor: str             # matched from the start of an Inductor kernel's name; "": none
    description: str          # what it holds (docs/outputs.md)


RECORDS = (
    KernelClass(ATTENTION, "#8172B3", mma=True,
                library=r"flash|fmha|sdpa|attention|_attn|dot_do_o|convert_dq", inductor="",
                description="fused attention kernels (flash, fmha, cuDNN's SDPA and its backward's helpers)"),
    KernelClass(MATMUL, "#4C72B0", mma=True,
                library=r"gemm|gemv|cutlass|xmma|nvjet|cublas|wgmma|s16816|s1688|fprop|dgrad|wgrad|"
                        r"conv(?!ert)|^Kernel2?$",
                inductor=r"triton_tem_",
                description="GEMMs and convolutions, their epilogues included (a GEMM with a fused bias or "
                            "activation): cuBLAS (nvjet, cutlass Kernel2, gemm, gemv), cuDNN (xmma fprop, dgrad, "
                            "wgrad, implicit gemm), Inductor's templates (triton_tem_)"),
    KernelClass(COPIES, "#C44E52", mma=False,
                library=r"copy|memcpy|memset|nchwToNhwc|nhwcToNchw|CatArray|transpose|AddPadding|"
                        r"gather|scatter|index_|indexing|embedding",
                # an Inductor pointwise kernel whose fused ops only move data
                inductor=r"triton_poi_fused_((?:_to_copy|to_copy|clone|cat|view|_unsafe_view|transpose|permute|"
                         r"copy_|copy|expand|slice|select|unsqueeze|squeeze|t|constant_pad_nd)_?)+_?\d*$",
                description="layout and dtype copies, concatenation, gather and scatter, memcpy and memset; an "
                            "Inductor pointwise kernel whose fused ops are only copies and views"),
    KernelClass(REDUCTION, "#55A868", mma=False,
                library=r"norm|reduce|softmax|welford|scan|GammaBeta|_sum_|argmax|topk|sort",
                inductor=r"triton_(red|per)_",
                description="reductions, norms, softmax, scans; Inductor's triton_red_ and triton_per_ kernels"),
    KernelClass(ELEMENTWISE, "#DD8452", mma=False,
                library=r"elementwise|multi_tensor_apply|dropout|activation|relu|gelu|silu|distribution|fill|pool",
                inductor=r"triton_poi_",
                description="pointwise kernels (ATen's elementwise kernels, Inductor's triton_poi_, the "
                            "optimizer's multi_tensor_apply, dropout)"),
    KernelClass(OTHER, "#9C9C9C", mma=False, library="", inductor="",
                description="anything no rule above matches"),
)
CLASSES = tuple(c.name for c in RECORDS)                  # in the order rules are tried
MMA_CLASSES = tuple(c.name for c in RECORDS if c.mma)     # tensor instructions count as FLOPs
COLOURS = {c.name: c.colour for c in RECORDS}

_INDUCTOR = re.compile(r"^triton_(poi|red|per|tem)_")
# per record: (name, library rule, Inductor rule), each compiled (None where it has none)
_RULES = [(c.name, re.compile(c.library, re.I) if c.library else None,
           re.compile(f"^(?:{c.inductor})") if c.inductor else None) for c in RECORDS]


def kernel_class(name: str, full_name: str = "") -> str:
    """The class (one of CLASSES) of a kernel by its short name and full name (module doc)."""
    name = str(name)
    inductor = _INDUCTOR.match(name) is not None
    for text in (name, str(full_name or "")):
        for cls, library, kernel in _RULES:
            rule = kernel if inductor else library
            if rule and rule.search(text):
                return cls
    return CLASSES[-1]


def docs_table() -> str:
    """The table docs/outputs.md holds between its kernel-classes markers."""
    rows = ["| class | colour | tensor instructions count as FLOPs | what it holds |", "|---|---|---|---|"]
    rows += [f"| `{c.name}` | `{c.colour}` | {'yes' if c.mma else 'no'} | {c.description} |" for c in RECORDS]
    return "\n".join(rows)


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


if __name__ == "__main__":   # the docs table, to paste between docs/outputs.md's markers
    sys.stdout.write(docs_table() + "\n")
