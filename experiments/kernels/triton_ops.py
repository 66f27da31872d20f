"""The kernels in Triton. Math in fp32 whatever the storage dtype; one read of every
input and one write of every output, so each kernel's floor is the copy bandwidth."""
import torch
import triton
import triton.language as tl

# pointwise ops (constexpr OP)
GELU_TANH, GELU_ERF, RELU = 0, 1, 2

_POINTWISE_CONFIGS = [
    triton.Config({"BLOCK": 1024}, num_warps=4),
    triton.Config({"BLOCK": 2048}, num_warps=8),
    triton.Config({"BLOCK": 4096}, num_warps=8),
    triton.Config({"BLOCK": 8192}, num_warps=16),
]


@triton.jit
def _tanh(a):
    # tanh(a) = 1 - 2 / (exp(2a) + 1): exact limits +-1 when exp over- or underflows
    return 1.0 - 2.0 / (tl.exp(2.0 * a) + 1.0)


@triton.jit
def _act(v, OP: tl.constexpr):
    if OP == 0:
        return 0.5 * v * (1.0 + _tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
    elif OP == 1:
        return 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    else:
        return tl.maximum(v, 0.0)


@triton.autotune(configs=_POINTWISE_CONFIGS, key=["n", "HAS_Y", "BROADCAST"])
@triton.jit
def _pointwise_kernel(x_ptr, y_ptr, out_ptr, n, ylen, OP: tl.constexpr, HAS_Y: tl.constexpr,
                      BROADCAST: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if HAS_Y:
        yoffs = offs % ylen if BROADCAST else offs
        v += tl.load(y_ptr + yoffs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, _act(v, OP).to(out_ptr.dtype.element_ty), mask=mask)


def _pointwise(x, y, op):
    assert x.is_cuda and x.is_contiguous(), "x must be a contiguous CUDA tensor"
    out = torch.empty_like(x)
    n = x.numel()
    if y is not None:
        y = y.contiguous()
        assert y.numel() == n or (y.dim() == 1 and y.numel() == x.shape[-1]), \
            "y must have x's shape or be a vector of x's last axis"
    ylen = y.numel() if y is not None else 1
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    _pointwise_kernel[grid](x, y if y is not None else x, out, n, ylen, OP=op,
                            HAS_Y=y is not None, BROADCAST=y is not None and ylen != n)
    return out


def gelu(x, approximate="tanh"):
    return _pointwise(x, None, GELU_TANH if approximate == "tanh" else GELU_ERF)


def bias_gelu(x, bias, approximate="none"):
    return _pointwise(x, bias, GELU_TANH if approximate == "tanh" else GELU_ERF)


def add_relu(x, y):
    return _pointwise(x, y, RELU)


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < ncols
    v = tl.load(x_ptr + row * ncols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * ncols + cols, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty),
             mask=mask)


def softmax(x):
    assert x.is_cuda and x.is_contiguous(), "x must be a contiguous CUDA tensor"
    ncols = x.shape[-1]
    rows = x.numel() // ncols
    out = torch.empty_like(x)
    block = triton.next_power_of_2(ncols)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    _softmax_kernel[(rows,)](x, out, ncols, BLOCK=block, num_warps=warps)
    return out


@triton.jit
def _lstm_kernel(gx_ptr, gh_ptr, b_ptr, c_ptr, h_out, c_out, n, H, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row = offs // H
    col = offs % H
    g0 = row * 4 * H + col
    gi = (tl.load(gx_ptr + g0, mask=mask).to(tl.float32) + tl.load(gh_ptr + g0, mask=mask).to(tl.float32)
          + tl.load(b_ptr + col, mask=mask).to(tl.float32))
    gf = (tl.load(gx_ptr + g0 + H, mask=mask).to(tl.float32) + tl.load(gh_ptr + g0 + H, mask=mask).to(tl.float32)
          + tl.load(b_ptr + col + H, mask=mask).to(tl.float32))
    gg = (tl.load(gx_ptr + g0 + 2 * H, mask=mask).to(tl.float32)
          + tl.load(gh_ptr + g0 + 2 * H, mask=mask).to(tl.float32)
          + tl.load(b_ptr + col + 2 * H, mask=mask).to(tl.float32))
    go = (tl.load(gx_ptr + g0 + 3 * H, mask=mask).to(tl.float32)
          + tl.load(gh_ptr + g0 + 3 * H, mask=mask).to(tl.float32)
          + tl.load(b_ptr + col + 3 * H, mask=mask).to(tl.float32))
    c = tl.load(c_ptr + offs, mask=mask).to(tl.float32)
    c_new = tl.sigmoid(gf) * c + tl.sigmoid(gi) * _tanh(gg)
    h_new = tl.sigmoid(go) * _tanh(c_new)
    tl.store(c_out + offs, c_new.to(c_out.dtype.element_ty), mask=mask)
    tl.store(h_out + offs, h_new.to(h_out.dtype.element_ty), mask=mask)


def lstm_gates(gx, gh, bias, c):
    for t in (gx, gh, bias, c):
        assert t.is_cuda and t.is_contiguous(), "inputs must be contiguous CUDA tensors"
    B, H = c.shape
    assert gx.shape == gh.shape == (B, 4 * H) and bias.shape == (4 * H,)
    h_new, c_new = torch.empty_like(c), torch.empty_like(c)
    n = B * H
    block = 1024
    _lstm_kernel[(triton.cdiv(n, block),)](gx, gh, bias, c, h_new, c_new, n, H, BLOCK=block, num_warps=4)
    return h_new, c_new
