"""Triton device functions of the hand-written kernels: the activations and their
derivatives in fp32 (GELU tanh and erf, ReLU, sigmoid, tanh), with the hardware's
approximate instructions for 16-bit storage (HALF), and the loads and stores of data
streamed once (`stream_load`, `stream_store`: an eviction hint where EVICT is set).
"""
import triton
import triton.language as tl


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
def sigmoid_of(v, HALF: tl.constexpr):
    if HALF:
        return _sigmoid_fast(v)
    return _sigmoid(v)


@triton.jit
def tanh_of(v, HALF: tl.constexpr):
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
def act(v, OP: tl.constexpr, HALF: tl.constexpr):
    if OP == 0:  # 0.5 v (1 + tanh(a)) = v sigmoid(2a)
        return v * _sigmoid(1.5957691216057308 * (v + 0.044715 * v * v * v))
    elif OP == 1:
        if HALF:
            return _gelu_erf_fast(v)
        return 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    else:
        return tl.maximum(v, 0.0)


@triton.jit
def _gelu_erf_grad_fast(v):
    # Phi(v) + v phi(v) with _gelu_erf_fast's Phi: q = Phi(-|v|) = p exp(-v^2/2), and
    # phi(v) = exp(-v^2/2) / sqrt(2 pi) from the same ex2
    t = _ptx_f32(1.0 + 0.33267253 * tl.abs(v), "rcp.approx.ftz.f32")
    p = t * (0.1740121 + t * (-0.0479399 + t * 0.3739278))
    e = _ptx_f32(v * v * -0.7213475204444817, "ex2.approx.ftz.f32")
    q = p * e
    return tl.where(v < 0, q, 1.0 - q) + v * e * 0.3989422804014327


@triton.jit
def act_grad(v, OP: tl.constexpr, HALF: tl.constexpr):
    # d act / dv (reference.py derives each)
    if OP == 0:  # s + v s (1 - s) u', s = sigmoid(u), u = K (v + 0.044715 v^3), u' = K + 3 0.044715 K v^2
        s = _sigmoid(1.5957691216057308 * (v + 0.044715 * v * v * v))
        return s + v * s * (1.0 - s) * (1.5957691216057308 + 0.21406444881780073 * v * v)
    elif OP == 1:  # Phi(v) + v phi(v)
        if HALF:
            return _gelu_erf_grad_fast(v)
        return 0.5 * (1.0 + tl.erf(v * 0.7071067811865476)) + v * 0.3989422804014327 * tl.exp(-0.5 * v * v)
    else:
        return tl.where(v > 0, 1.0, 0.0)


@triton.jit
def stream_load(ptr, mask, EVICT: tl.constexpr):
    # a load of data read once: with EVICT, marked first to be evicted from L2
    if EVICT:
        return tl.load(ptr, mask=mask, eviction_policy="evict_first")
    return tl.load(ptr, mask=mask)


@triton.jit
def stream_store(ptr, v, mask, EVICT: tl.constexpr):
    # a store of data written once: with EVICT, a streaming store (.cs: evict first)
    if EVICT:
        tl.store(ptr, v, mask=mask, cache_modifier=".cs")
    else:
        tl.store(ptr, v, mask=mask)
