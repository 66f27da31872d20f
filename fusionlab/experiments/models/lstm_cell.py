"""The LSTM cell of seed 001 (3.3): gates = x @ W_i + h @ W_h + b, chunked into
i, f, g, o; c' = sigmoid(f) c + sigmoid(i) tanh(g); h' = sigmoid(o) tanh(c').

The seed gives no sizes; input = hidden = 1024, batch 1024. The weights are stored in
nn.LSTM's layout (W_i = weight_ih.T) so that cudnn_lstm runs the same parameters through
cuDNN, and the hand-written kernels fuse the gate math after the two matmuls.
"""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class LSTMCell(nn.Module):
    def __init__(self, input_size=1024, hidden=1024):
        super().__init__()
        k = hidden ** -0.5
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden, input_size).uniform_(-k, k))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden, hidden).uniform_(-k, k))
        self.bias = nn.Parameter(torch.empty(4 * hidden).uniform_(-k, k))

    def forward(self, x, h, c):
        gates = x @ self.weight_ih.t() + h @ self.weight_hh.t() + self.bias
        i, f, g, o = gates.chunk(4, dim=1)
        i = torch.sigmoid(i)
        f = torch.sigmoid(f)
        g = torch.tanh(g)
        o = torch.sigmoid(o)
        c_new = f * c + i * g
        h_new = o * torch.tanh(c_new)
        return h_new, c_new

    def forward_hand(self, ops, x, h, c):
        return ops.lstm_gates(x @ self.weight_ih.t(), h @ self.weight_hh.t(), self.bias, c)


@register_model("lstm_cell", seed="001 (3.3)", default_batch=1024, tags=("lstm", "hand"),
                description="one LSTM step with the gates written out, input = hidden = 1024; "
                            "x, h, c = (batch, 1024)",
                sizes={"input_size": (1, 65536), "hidden": (1, 65536)})
def build(batch, dtype, device, input_size=1024, hidden=1024):
    model = LSTMCell(input_size, hidden).to(device=device, dtype=dtype)
    x, h, c = (torch.randn(batch, n, device=device, dtype=dtype) for n in (input_size, hidden, hidden))
    return model, (x, h, c)
