"""The hand-written kernels as torch.autograd.Functions, for train mode.

Each implementation (triton_ops, cuda_ops, and reference: the same math in PyTorch ops)
gives a forward and a hand-written backward; the classes made here wire them into
autograd. Backward recomputes from the saved inputs (x + y, the LSTM gates) rather than
saving an activation, so the forward writes only its outputs, as in inference:

    pointwise_function: out = act(x [+ y]), act = GELU (tanh or erf) or ReLU; y of x's
        shape, or a vector of x's last axis (a bias, broadcast along the rows).
        backward(g, x, y, op) -> (dx, dy): dx = g act'(x + y); dy = dx for a y of x's
        shape, and for a bias the sum of dx over the rows (the Triton and CUDA kernels
        fuse it: per-row-group partial sums in fp32, then one small sum).
    lstm_function: (h, c') = lstm_gates(gx, gh, bias, c).
        backward(gx, gh, bias, c, dh, dc') -> (dgates, dbias, dc): the gates recomputed;
        dgates is the gradient of gx and of gh alike (gates = gx + gh + bias), dbias its
        sum over the rows.

Without autograd (no_grad, or no input that requires grad) the implementations call
their forward kernel directly, as in inference: `needs_grad` decides.
"""
from __future__ import annotations

import torch

GELU_TANH, GELU_ERF, RELU = 0, 1, 2   # the kernels' op codes (constexpr OP, template OP)


def op_code(approximate: str) -> int:
    """GELU's op code for F.gelu's `approximate` ("tanh" or "none")."""
    return GELU_TANH if approximate == "tanh" else GELU_ERF


def needs_grad(*tensors) -> bool:
    """Whether autograd must record this call (grad mode on and an input requires grad)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def no_backward(name: str, *tensors) -> None:
    """Raise Unsupported where a kernel without a backward would be recorded by autograd
    (its output would silently cut the graph, and the parameters before it get no grad)."""
    if needs_grad(*tensors):
        from fusionlab.experiments.registry import Unsupported
        raise Unsupported(f"the hand-written {name} kernel defines no backward (train mode)")


def pointwise_function(name: str, forward, backward) -> type:
    """An autograd.Function out = forward(x, y, op), with backward(g, x, y, op) -> (dx, dy)."""
    def fwd(ctx, x, y, op):
        ctx.op = op
        ctx.save_for_backward(x, y)
        return forward(x, y, op)

    def bwd(ctx, g):
        x, y = ctx.saved_tensors
        dx, dy = backward(g.contiguous(), x, y, ctx.op)
        if y is None or not ctx.needs_input_grad[1]:
            dy = None
        elif dy.shape != y.shape:   # y of x's numel, another shape: x's gradient in y's
            dy = dy.reshape(y.shape)
        return (dx if ctx.needs_input_grad[0] else None), dy, None

    # made by type() so that autograd names its node after it (grad_fn: <name>Backward)
    return type(name, (torch.autograd.Function,), {"forward": staticmethod(fwd), "backward": staticmethod(bwd)})


def lstm_function(name: str, forward, backward) -> type:
    """An autograd.Function (h, c') = forward(gx, gh, bias, c), with
    backward(gx, gh, bias, c, dh, dc') -> (dgates, dbias, dc)."""
    def fwd(ctx, gx, gh, bias, c):
        ctx.save_for_backward(gx, gh, bias, c)
        return forward(gx, gh, bias, c)

    def bwd(ctx, dh, dc):
        gx, gh, bias, c = ctx.saved_tensors
        dgates, dbias, dc_prev = backward(gx, gh, bias, c, dh.contiguous(), dc.contiguous())
        need = ctx.needs_input_grad
        return (dgates if need[0] else None, dgates if need[1] else None,
                dbias if need[2] else None, dc_prev if need[3] else None)

    return type(name, (torch.autograd.Function,), {"forward": staticmethod(fwd), "backward": staticmethod(bwd)})
