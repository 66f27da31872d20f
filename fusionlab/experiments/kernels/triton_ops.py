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
def _sigmoid(v):
    # 1 / (1 + exp(-v)) with the fast (non-IEEE) divide: exact limits 0 and 1
    return tl.math.fdiv(1.0, 1.0 + tl.exp(-v), ieee_rounding=False)


# 16-bit storage: the hardware's approximate instructions (one MUFU op each, no range
# fix-ups). Their error (rel 2^-11 for tanh.approx, a few ulp for ex2/rcp) is far below
# bf16/fp16 rounding (2^-8 / 2^-11 relative, and the check's tolerance); fp32 keeps the
# accurate paths above.
@triton.jit
def _ptx_f32(v, INSTR: tl.constexpr):
    # one PTX instruction on an fp32 value: "INSTR out, in;"
    return tl.inline_asm_elementwise(INSTR + " $0, $1;", "=r,r", [v], dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def _tanh_fast(v):
    return _ptx_f32(v, "tanh.approx.f32")


@triton.jit
def _sigmoid_fast(v):
    # sigmoid(v) = 0.5 + 0.5 tanh(v / 2)
    return 0.5 + 0.5 * _tanh_fast(0.5 * v)


@triton.jit
def _sigmoid_of(v, HALF: tl.constexpr):
    if HALF:
        return _sigmoid_fast(v)
    return _sigmoid(v)


@triton.jit
def _tanh_of(v, HALF: tl.constexpr):
    if HALF:
        return _tanh_fast(v)
    return 2.0 * _sigmoid(2.0 * v) - 1.0


@triton.jit
def _gelu_erf_fast(v):
    # v Phi(v), Phi from erf by Abramowitz & Stegun 7.1.25 (abs error 2.5e-5, so at most
    # 1.3e-5 |v| in GELU). With z = |v| / sqrt(2), t = 1 / (1 + 0.47047 z):
    # q = (1 - erf(z)) / 2 = t (a1 + t (a2 + t a3)) exp(-z^2) / 2, and Phi(v) = 1 - q for
    # v >= 0, q for v < 0.
    t = _ptx_f32(1.0 + 0.33267253 * tl.abs(v), "rcp.approx.ftz.f32")  # 0.47047 / sqrt(2)
    p = t * (0.1740121 + t * (-0.0479399 + t * 0.3739278))  # A&S a1..a3 halved
    vq = v * p * _ptx_f32(v * v * -0.7213475204444817, "ex2.approx.ftz.f32")  # exp(-v^2/2) = 2^(-v^2 log2(e)/2)
    return tl.where(v < 0, vq, v - vq)


@triton.jit
def _act(v, OP: tl.constexpr, HALF: tl.constexpr):
    if OP == 0:  # 0.5 v (1 + tanh(a)) = v sigmoid(2a)
        return v * _sigmoid(1.5957691216057308 * (v + 0.044715 * v * v * v))
    elif OP == 1:
        if HALF:
            return _gelu_erf_fast(v)
        return 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    else:
        return tl.maximum(v, 0.0)


@triton.autotune(configs=_POINTWISE_CONFIGS, key=["n", "HAS_Y"])
@triton.jit
def _pointwise_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, HAS_Y: tl.constexpr,
                      HALF: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if HAS_Y:
        v += tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, _act(v, OP, HALF).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rowwise_kernel(x_ptr, y_ptr, out_ptr, rows, cols, OP: tl.constexpr, HALF: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x (rows, cols) + y (cols,): tiles of BLOCK_M x BLOCK_N, y loaded once per tile,
    # no division or modulo per element
    r = tl.program_id(1).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    offs = r[:, None] * cols + c[None, :]
    y = tl.load(y_ptr + c, mask=c < cols).to(tl.float32)
    v = tl.load(x_ptr + offs, mask=mask).to(tl.float32) + y[None, :]
    tl.store(out_ptr + offs, _act(v, OP, HALF).to(out_ptr.dtype.element_ty), mask=mask)


def _pointwise(x, y, op):
    assert x.is_cuda and x.is_contiguous(), "x must be a contiguous CUDA tensor"
    out = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return out
    half = x.element_size() == 2
    if y is not None:
        y = y.contiguous()
        assert y.numel() == n or (y.dim() == 1 and y.numel() == x.shape[-1]), \
            "y must have x's shape or be a vector of x's last axis"
    if y is not None and y.numel() != n:   # bias broadcast along the rows
        cols = y.numel()
        rows = n // cols
        block_n = min(triton.next_power_of_2(cols), 1024)
        block_m = max(1, 4096 // block_n)
        assert triton.cdiv(rows, block_m) <= 65535, "too many rows for grid axis 1"
        _rowwise_kernel[(triton.cdiv(cols, block_n), triton.cdiv(rows, block_m))](
            x, y, out, rows, cols, OP=op, HALF=half, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8)
        return out
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    _pointwise_kernel[grid](x, y if y is not None else x, out, n, OP=op, HAS_Y=y is not None, HALF=half)
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
def _lstm_kernel(gx_ptr, gh_ptr, b_ptr, c_ptr, h_out, c_out, H, HALF: tl.constexpr,
                 BLOCK: tl.constexpr):
    # grid (column blocks, rows): no division or modulo per element
    row = tl.program_id(1).to(tl.int64)
    col = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = col < H
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
    c = tl.load(c_ptr + row * H + col, mask=mask).to(tl.float32)
    c_new = _sigmoid_of(gf, HALF) * c + _sigmoid_of(gi, HALF) * _tanh_of(gg, HALF)
    h_new = _sigmoid_of(go, HALF) * _tanh_of(c_new, HALF)
    tl.store(c_out + row * H + col, c_new.to(c_out.dtype.element_ty), mask=mask)
    tl.store(h_out + row * H + col, h_new.to(h_out.dtype.element_ty), mask=mask)


def lstm_gates(gx, gh, bias, c):
    for t in (gx, gh, bias, c):
        assert t.is_cuda and t.is_contiguous(), "inputs must be contiguous CUDA tensors"
    B, H = c.shape
    assert gx.shape == gh.shape == (B, 4 * H) and bias.shape == (4 * H,)
    h_new, c_new = torch.empty_like(c), torch.empty_like(c)
    if B * H == 0:
        return h_new, c_new
    assert B <= 65535, f"lstm_gates: batch {B} > 65535 (grid axis 1)"
    block = min(triton.next_power_of_2(H), 1024)
    _lstm_kernel[(triton.cdiv(H, block), B)](gx, gh, bias, c, h_new, c_new, H,
                                             HALF=c.element_size() == 2, BLOCK=block,
                                             num_warps=4 if block <= 512 else 8)
    return h_new, c_new
