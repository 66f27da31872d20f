"""The LSTM cell through cuDNN (seed 001, 3.3: manual gates vs torch._cudnn_rnn): an
nn.LSTM of one layer whose weights are the cell's own parameters, run for one step.
On a CPU it runs ATen's native LSTM (no cuDNN), reported as such by the device column."""
import torch
from torch import nn

from experiments.registry import register_variant, requires


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
        _, (h1, c1) = self.lstm(x.unsqueeze(0), (h.unsqueeze(0), c.unsqueeze(0)))
        return h1[0], c1[0]


@register_variant("cudnn_lstm", description="nn.LSTM (cuDNN on the GPU) with the cell's weights, one step",
                  supports=requires(tag="lstm"))
def apply(model, example_inputs, options):
    return CudnnLSTMStep(model)
