"""The LSTM cell through cuDNN (seed 001, 3.3: manual gates vs torch._cudnn_rnn): an
nn.LSTM of one layer whose weights are the cell's own parameters, run for one step.
On a CPU it runs ATen's native LSTM (no cuDNN), reported as such by the device column.

Precision: cuDNN runs an fp32 LSTM's GEMMs in TF32 by default (torch.backends.cudnn.rnn
.fp32_precision "tf32"), while eager's fp32 matmuls are IEEE fp32 (torch.backends.cuda
.matmul); with TF32 the step is not allclose to eager (docs/models.md has the errors
measured against a float64 run). So the step runs cuDNN at the precision eager's matmuls
use: the same math, timed fairly, rather than a faster, less accurate one.
"""
import contextlib

import torch
from torch import nn

from fusionlab.experiments.registry import register_variant, requires


class CudnnLSTMStep(nn.Module):
    def __init__(self, cell):
        super().__init__()
        hidden4, input_size = cell.weight_ih.shape
        w = cell.weight_ih
        self.lstm = nn.LSTM(input_size, hidden4 // 4, num_layers=1).to(device=w.device, dtype=w.dtype)
        # share, not copy: gradients land on the cell's parameters
        self.lstm.weight_ih_l0 = cell.weight_ih
        self.lstm.weight_hh_l0 = cell.weight_hh
        self.lstm.bias_ih_l0 = cell.bias
        self.lstm.bias_hh_l0 = nn.Parameter(torch.zeros_like(cell.bias), requires_grad=False)
        if w.is_cuda:
            self.lstm.flatten_parameters()

    def forward(self, x, h, c):
        with eager_matmul_precision():
            _, (h1, c1) = self.lstm(x.unsqueeze(0), (h.unsqueeze(0), c.unsqueeze(0)))
        return h1[0], c1[0]


@contextlib.contextmanager
def eager_matmul_precision():
    """cuDNN's RNN fp32 precision set to what eager's fp32 matmuls use (IEEE unless the
    user allowed TF32 for matmuls), restored after."""
    want_tf32 = torch.backends.cuda.matmul.allow_tf32
    rnn = getattr(torch.backends.cudnn, "rnn", None)
    if rnn is not None and hasattr(rnn, "fp32_precision"):  # torch >= 2.9
        old = rnn.fp32_precision
        rnn.fp32_precision = "tf32" if want_tf32 else "ieee"
        try:
            yield
        finally:
            rnn.fp32_precision = old
    else:
        old = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = want_tf32
        try:
            yield
        finally:
            torch.backends.cudnn.allow_tf32 = old


@register_variant("cudnn_lstm", description="nn.LSTM (cuDNN on the GPU) with the cell's weights, one step",
                  supports=requires(tag="lstm"))
def apply(model, example_inputs, options):
    return CudnnLSTMStep(model)
