"""The seed's naive GELU kernels (seed 004, 7.4-7.5), kept as they are taught, for
comparison with the tuned ones (variants triton_seed, cuda_seed).

- Triton: one element per lane, BLOCK_SIZE 1024, tanh through exp.
- CUDA: one element per thread, 1024 threads per block, fp32 only; its constants are
  doubles, so the math runs in double precision. The seed's listing reads `x` without
  declaring it; the one line `float x = in[i];` is added so that it compiles.
"""
from __future__ import annotations

import functools

import torch

CUDA_SRC = r"""
#include <math.h>
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>

__global__ void gelu_kernel(float* in, float* out, int num_elements) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < num_elements) {
        float x = in[i];  // added: the seed's listing uses x undeclared
        out[i] = 0.5 * x * (1.0 + tanh(0.79788456 * (x + 0.044715 * x * x * x)));
    }
}

inline unsigned int cdiv(unsigned int a, unsigned int b) {
    return (a + b - 1) / b;
}

torch::Tensor gelu(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cuda());
    TORCH_CHECK(x.is_contiguous());
    torch::Tensor y = torch::empty_like(x);
    int num_elements = x.numel();
    int block_size = 1024;
    int num_blocks = cdiv(num_elements, block_size);
    gelu_kernel<<<num_blocks, block_size>>>(x.data_ptr<float>(), y.data_ptr<float>(), num_elements);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


@functools.lru_cache(maxsize=None)
def cuda_module():
    from torch.utils.cpp_extension import load_inline

    from fusionlab.experiments.kernels.cuda_ops import build_dir
    return load_inline(name="fusionlab_seed_gelu", cpp_sources=["torch::Tensor gelu(torch::Tensor x);"],
                       cuda_sources=[CUDA_SRC], functions=["gelu"], extra_cflags=["-O2"],
                       build_directory=build_dir(CUDA_SRC), verbose=False)


def cuda_gelu(x: torch.Tensor) -> torch.Tensor:
    if x.dtype != torch.float32:
        from fusionlab.experiments.registry import Unsupported
        raise Unsupported(f"the seed's CUDA GELU kernel is fp32 only (data_ptr<float>), not {x.dtype}")
    return cuda_module().gelu(x)


@functools.lru_cache(maxsize=None)
def _triton_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def triton_gelu_kernel(x_ptr, y_ptr, num_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        block_start = pid * BLOCK_SIZE
        offsets = block_start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < num_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        # tl.tanh does not exist: tanh(a) = (exp(2a) - 1) / (exp(2a) + 1)
        a = 0.79788456 * (x + 0.044715 * x * x * x)
        exp = tl.exp(2 * a)
        tanh = (exp - 1) / (exp + 1)
        y = 0.5 * x * (1 + tanh)
        tl.store(y_ptr + offsets, y, mask=mask)
    return triton_gelu_kernel


def triton_gelu(x: torch.Tensor) -> torch.Tensor:
    import triton
    if x.dtype != torch.float32:
        from fusionlab.experiments.registry import Unsupported
        raise Unsupported(f"the seed's Triton GELU kernel computes in the storage dtype and tl.exp "
                          f"takes fp32/fp64 only (CompilationError on {x.dtype})")
    assert x.is_cuda
    assert x.is_contiguous()
    y = torch.empty_like(x)
    num_elements = x.numel()
    block_size = 1024
    num_blocks = triton.cdiv(num_elements, block_size)
    _triton_kernel()[(num_blocks,)](x, y, num_elements, BLOCK_SIZE=block_size)
    return y
