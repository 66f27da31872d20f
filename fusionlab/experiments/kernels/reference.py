"""The hand-written kernels' math in PyTorch ops, forward and hand-written backward, in the
kernels' own forms (tanh-GELU as v sigmoid(2a), ...): the formulas the Triton and CUDA
backward kernels compute, written once where the CPU can check them in float64
(tests/test_kernel_grads.py: torch.autograd.gradcheck of the Functions below, and
agreement with autograd of the forward).

GELU, tanh approximation (seed 004): with u = 2a = K (v + 0.044715 v^3), K = 2 sqrt(2/pi),
    gelu(v) = 0.5 v (1 + tanh(a)) = v s,  s = sigmoid(u)
    gelu'(v) = s + v s (1 - s) u',  u' = K (1 + 3 0.044715 v^2) = K + K3 v^2
GELU, exact: gelu(v) = v Phi(v), gelu'(v) = Phi(v) + v phi(v), phi(v) = exp(-v^2 / 2) / sqrt(2 pi)
ReLU: relu'(v) = 1 for v > 0, else 0 (PyTorch's threshold_backward: 0 at v = 0)
LSTM gates: gates = gx + gh + b = (i, f, g, o) pre-activations; si, sf, so = sigmoid, tg = tanh(g),
    c' = sf c + si tg, h = so tanh(c'). With dh, dc' the outputs' gradients and
    dct = dc' + dh so (1 - tanh(c')^2) (c's total gradient):
    di = dct tg si (1 - si), df = dct c sf (1 - sf), dg = dct si (1 - tg^2),
    do = dh tanh(c') so (1 - so); dc = dct sf; dgx = dgh = (di, df, dg, do); db = their sum over rows.
"""
from __future__ import annotations

import torch

from fusionlab.experiments.kernels.functions import (GELU_ERF, GELU_TANH, RELU, lstm_function, needs_grad,
                                                     op_code, pointwise_function)

K = 1.5957691216057308        # 2 sqrt(2 / pi)
K3 = 0.21406444881780073      # 3 * 0.044715 * K
INV_SQRT2 = 0.7071067811865476
INV_SQRT2PI = 0.3989422804014327


def act(v, op):
    if op == GELU_TANH:
        return v * torch.sigmoid(K * (v + 0.044715 * v * v * v))
    if op == GELU_ERF:
        return 0.5 * v * (1.0 + torch.erf(v * INV_SQRT2))
    return torch.clamp_min(v, 0.0)


def act_grad(v, op):
    """act'(v), the formula of the backward kernels."""
    if op == GELU_TANH:
        s = torch.sigmoid(K * (v + 0.044715 * v * v * v))
        return s + v * s * (1.0 - s) * (K + K3 * v * v)
    if op == GELU_ERF:
        return 0.5 * (1.0 + torch.erf(v * INV_SQRT2)) + v * INV_SQRT2PI * torch.exp(-0.5 * v * v)
    return (v > 0).to(v.dtype)


def pointwise_forward(x, y, op):
    return act(x if y is None else x + y, op)


def pointwise_backward(g, x, y, op):
    """(dx, dy): dx = g act'(x + y); dy = dx (y of x's shape) or its sum over the rows (bias)."""
    dx = g * act_grad(x if y is None else x + y, op)
    if y is None:
        return dx, None
    if y.numel() == x.numel():
        return dx, dx
    return dx, dx.reshape(-1, y.numel()).sum(0)


def lstm_gates_forward(gx, gh, bias, c):
    i, f, g, o = (gx + gh + bias).chunk(4, dim=1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new


def lstm_gates_backward(gx, gh, bias, c, dh, dc):
    """(dgates, dbias, dc_prev), the gates recomputed from the inputs."""
    i, f, g, o = (gx + gh + bias).chunk(4, dim=1)
    si, sf, tg, so = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    tc = torch.tanh(sf * c + si * tg)
    dct = dc + dh * so * (1.0 - tc * tc)
    dgates = torch.cat([dct * tg * si * (1.0 - si), dct * c * sf * (1.0 - sf),
                        dct * si * (1.0 - tg * tg), dh * tc * so * (1.0 - so)], dim=1)
    return dgates, dgates.sum(0), dct * sf


Pointwise = pointwise_function("ReferencePointwise", pointwise_forward, pointwise_backward)
LstmGates = lstm_function("ReferenceLstmGates", lstm_gates_forward, lstm_gates_backward)


def _apply(x, y, op):
    return Pointwise.apply(x, y, op) if needs_grad(x, y) else pointwise_forward(x, y, op)


def gelu(x, approximate="tanh"):
    return _apply(x, None, op_code(approximate))


def bias_gelu(x, bias, approximate="none"):
    return _apply(x, bias, op_code(approximate))


def add_relu(x, y):
    return _apply(x, y, RELU)


def lstm_gates(gx, gh, bias, c):
    return LstmGates.apply(gx, gh, bias, c) if needs_grad(gx, gh, bias, c) else lstm_gates_forward(gx, gh, bias, c)
