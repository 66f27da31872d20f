"""The hand-written Triton and CUDA kernels against PyTorch, on the GPU machine (skipped
where there is no GPU: they are CUDA kernels). Sizes include tails that do not fill a
vector or a block, broadcast and same-shape operands, and every supported dtype."""
import pytest
import torch

from fusionlab.core import axes
from fusionlab.experiments.kernels import aten_ops, load, seed
from fusionlab.runner.check import compare

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="hand-written kernels need a GPU")
IMPLS = ["triton", "cuda"]
DTYPES = list(axes.TENSOR_DTYPES)
SHAPES = [(1, 1), (3, 5), (7, 1000), (256, 4096), (33, 16384)]


def r(*shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=getattr(torch, dtype))


def check(out, ref, dtype):
    res = compare(torch, out, ref, dtype)
    assert res["passed"], res


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_pointwise(impl, dtype, shape):
    k = load(impl)
    x, b, y = r(*shape, dtype=dtype), r(shape[-1], dtype=dtype), r(*shape, dtype=dtype)
    for approx in ("tanh", "none"):
        check(k.gelu(x, approx), aten_ops.gelu(x, approx), dtype)
        check(k.bias_gelu(x, b, approx), aten_ops.bias_gelu(x, b, approx), dtype)
    check(k.add_relu(x, b), aten_ops.add_relu(x, b), dtype)
    check(k.add_relu(x, y), aten_ops.add_relu(x, y), dtype)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 8), (5, 64), (300, 1024), (64, 4096), (3, 8192)])
def test_softmax(impl, dtype, shape):
    x = r(*shape, dtype=dtype) * 4
    out = load(impl).softmax(x)
    check(out, aten_ops.softmax(x), dtype)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B,H", [(1, 1), (3, 7), (64, 1024), (257, 96)])
def test_lstm_gates(impl, dtype, B, H):
    gx, gh, b, c = r(B, 4 * H, dtype=dtype), r(B, 4 * H, dtype=dtype), r(4 * H, dtype=dtype), r(B, H, dtype=dtype)
    check(load(impl).lstm_gates(gx, gh, b, c), aten_ops.lstm_gates(gx, gh, b, c), dtype)


def test_seed_kernels_match_the_manual_gelu():
    x = r(1000, 1000, dtype="float32")
    ref = aten_ops.gelu(x, "tanh")
    check(seed.triton_gelu(x), ref, "float32")
    check(seed.cuda_gelu(x), ref, "float32")


def test_cuda_extension_is_cached():
    from fusionlab.experiments.kernels import cuda_ops
    assert cuda_ops.extension() is cuda_ops.extension()
