"""What the transformers factories share: a wrapper that returns one tensor, and token
inputs."""
import torch
from torch import nn


class LastTensor(nn.Module):
    """A transformers model called with input_ids that returns one tensor of its output
    (`field`: logits or last_hidden_state)."""

    def __init__(self, model, field: str):
        super().__init__()
        self.model = model
        self.field = field

    def forward(self, input_ids):
        return getattr(self.model(input_ids=input_ids, use_cache=False, return_dict=True), self.field)


def tokens(batch: int, seq: int, vocab: int, device) -> torch.Tensor:
    """Random token ids, (batch, seq), int64."""
    return torch.randint(0, vocab, (batch, seq), device=device)


def configured(model_cls, config, dtype, device):
    """model_cls(config) with random weights, SDPA attention, in eval mode, on device in dtype."""
    config._attn_implementation = "sdpa"
    return model_cls(config).to(device=device, dtype=dtype)
