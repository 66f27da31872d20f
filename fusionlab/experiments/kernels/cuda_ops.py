"""The kernels in CUDA C++ (cuda_ops.cu), built with torch.utils.cpp_extension.load_inline
the first time they are used and cached: the build folder is keyed by a hash of the
source, so a second process (or a second run of the sweep) loads the built library."""
from __future__ import annotations

import functools
import hashlib
import os

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_ops.cu")
FUNCTIONS = ["gelu", "bias_gelu", "add_relu", "softmax_rows", "lstm_gates_fused"]
DECLS = """
torch::Tensor gelu(torch::Tensor x, bool approx_tanh);
torch::Tensor bias_gelu(torch::Tensor x, torch::Tensor bias, bool approx_tanh);
torch::Tensor add_relu(torch::Tensor x, torch::Tensor y);
torch::Tensor softmax_rows(torch::Tensor x);
std::vector<torch::Tensor> lstm_gates_fused(torch::Tensor gx, torch::Tensor gh, torch::Tensor bias, torch::Tensor c);
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


def gelu(x, approximate="tanh"):
    return extension().gelu(x, approximate == "tanh")


def bias_gelu(x, bias, approximate="none"):
    return extension().bias_gelu(x, bias, approximate == "tanh")


def add_relu(x, y):
    return extension().add_relu(x, y)


def softmax(x):
    return extension().softmax_rows(x)


def lstm_gates(gx, gh, bias, c):
    h, c_new = extension().lstm_gates_fused(gx, gh, bias, c)
    return h, c_new
