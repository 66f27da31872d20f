"""Hand-written kernels, one module per implementation, all with the same functions:

    gelu(x, approximate)          GELU, approximate="tanh" (seed 004) or "none" (erf)
    bias_gelu(x, bias, approximate)   gelu(x + bias), bias broadcast along the last axis
    add_relu(x, y)                relu(x + y), y of x's shape or broadcast along the last axis
    softmax(x)                    row-wise softmax over the last axis, one pass over HBM
    lstm_gates(gx, gh, bias, c)   the LSTM cell's gate math after its two matmuls -> (h, c)

Implementations: `triton` (triton_ops.py), `cuda` (cuda_ops.py: CUDA C++ built once with
torch.utils.cpp_extension.load_inline and cached) and `aten` (the library's own fused ops,
where it has one). The seed's naive GELU kernels are in seed.py. Every implementation is
checked against eager by the runner before it is timed, and by tests/test_kernels.py.

Train mode: in `triton` and `cuda`, gelu, bias_gelu, add_relu and lstm_gates are
torch.autograd.Functions (functions.py) with a hand-written backward kernel in the same
language; reference.py writes the same forward and backward formulas in PyTorch ops
(checked on CPU in float64 by tests/test_kernel_grads.py, which also compares the kernels'
gradients with eager's on the GPU). softmax and the seed's kernels are forward-only.
"""
from __future__ import annotations

import importlib

IMPLEMENTATIONS = {"triton": "triton_ops", "cuda": "cuda_ops", "aten": "aten_ops"}


def load(name: str):
    """The module of one implementation (imports Triton or builds the CUDA extension)."""
    return importlib.import_module(f"fusionlab.experiments.kernels.{IMPLEMENTATIONS[name]}")
