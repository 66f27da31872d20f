"""The kernels in CUDA C++ (cuda_ops.cu), built with torch.utils.cpp_extension.load_inline
the first time they are used and cached: the build folder is keyed by a hash of the
source, so a second process (or a second run of the sweep) loads the built library.

gelu, bias_gelu, add_relu and lstm_gates have a hand-written CUDA backward (train mode:
functions.py makes the autograd.Functions; reference.py derives the formulas); softmax
is forward-only.
"""
from __future__ import annotations

import functools
import hashlib
import os

from fusionlab.experiments.kernels.functions import (GELU_TANH, RELU, lstm_function, needs_grad, no_backward,
                                                     op_code, pointwise_function)

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_ops.cu")
FUNCTIONS = ["gelu", "bias_gelu", "add_relu", "softmax_rows", "lstm_gates_fused",
             "gelu_backward", "bias_gelu_backward", "add_relu_backward", "lstm_gates_backward"]
DECLS = """
torch::Tensor gelu(torch::Tensor x, bool approx_tanh);
torch::Tensor bias_gelu(torch::Tensor x, torch::Tensor bias, bool approx_tanh);
torch::Tensor add_relu(torch::Tensor x, torch::Tensor y);
torch::Tensor softmax_rows(torch::Tensor x);
std::vector<torch::Tensor> lstm_gates_fused(torch::Tensor gx, torch::Tensor gh, torch::Tensor bias, torch::Tensor c);
std::vector<torch::Tensor> gelu_backward(torch::Tensor g, torch::Tensor x, bool approx_tanh);
std::vector<torch::Tensor> bias_gelu_backward(torch::Tensor g, torch::Tensor x, torch::Tensor bias, bool approx_tanh);
std::vector<torch::Tensor> add_relu_backward(torch::Tensor g, torch::Tensor x, torch::Tensor y);
std::vector<torch::Tensor> lstm_gates_backward(torch::Tensor gx, torch::Tensor gh, torch::Tensor bias, torch::Tensor c,
                                               torch::Tensor dh, torch::Tensor dc);
"""


def build_dir(source: str) -> str:
    """~/.cache/fusionlab/cuda_ops/<hash of the source> (FUSIONLAB_CACHE moves the root)."""
    root = os.environ.get("FUSIONLAB_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "fusionlab"))
    d = os.path.join(root, "cuda_ops", hashlib.sha256(source.encode()).hexdigest()[:16])
    os.makedirs(d, exist_ok=True)
    return d


@functools.lru_cache(maxsize=None)
def extension():
    import torch
    from torch.utils.cpp_extension import load_inline
    if not torch.cuda.is_available():
        raise RuntimeError("the CUDA kernels need a GPU (torch sees none)")
    with open(SOURCE) as f:
        src = f.read()
    return load_inline(name="fusionlab_cuda_ops", cpp_sources=[DECLS], cuda_sources=[src],
                       functions=FUNCTIONS, extra_cuda_cflags=["-O3", "-lineinfo"],
                       build_directory=build_dir(src), verbose=False)


def _pointwise(x, y, op):
    if op == RELU:
        return extension().add_relu(x, y)
    if y is None:
        return extension().gelu(x, op == GELU_TANH)
    return extension().bias_gelu(x, y, op == GELU_TANH)


def _pointwise_backward(g, x, y, op):
    """(dx, dy) of out = act(x [+ y]): dy is dx for a y of x's shape, the sum of dx over
    the rows for a bias."""
    if op == RELU:
        dx, dy = extension().add_relu_backward(g, x, y)
    elif y is None:
        (dx,), dy = extension().gelu_backward(g, x, op == GELU_TANH), None
    else:
        dx, dy = extension().bias_gelu_backward(g, x, y, op == GELU_TANH)
    return dx, dy


def _lstm_gates(gx, gh, bias, c):
    h, c_new = extension().lstm_gates_fused(gx, gh, bias, c)
    return h, c_new


def _lstm_gates_backward(gx, gh, bias, c, dh, dc):
    dgates, dbias, dc_prev = extension().lstm_gates_backward(gx, gh, bias, c, dh, dc)
    return dgates, dbias, dc_prev


Pointwise = pointwise_function("CudaPointwise", _pointwise, _pointwise_backward)
LstmGates = lstm_function("CudaLstmGates", _lstm_gates, _lstm_gates_backward)


# inference (no autograd to record) calls the extension as directly as before

def gelu(x, approximate="tanh"):
    if needs_grad(x):
        return Pointwise.apply(x, None, op_code(approximate))
    return extension().gelu(x, approximate == "tanh")


def bias_gelu(x, bias, approximate="none"):
    if needs_grad(x, bias):
        return Pointwise.apply(x, bias, op_code(approximate))
    return extension().bias_gelu(x, bias, approximate == "tanh")


def add_relu(x, y):
    if needs_grad(x, y):
        return Pointwise.apply(x, y, RELU)
    return extension().add_relu(x, y)


def softmax(x):
    no_backward("CUDA softmax", x)
    return extension().softmax_rows(x)


def lstm_gates(gx, gh, bias, c):
    if needs_grad(gx, gh, bias, c):
        return LstmGates.apply(gx, gh, bias, c)
    return _lstm_gates(gx, gh, bias, c)
