"""OptimizedTransformerBlock, seed 001 (9.2): MultiheadAttention + residual + LayerNorm,
then a GELU MLP (512 -> 2048 -> 512) + residual + LayerNorm; d_model 512, 8 heads, input
(32, 128, 512) as in the seed. nn.MultiheadAttention is not batch_first, so PyTorch reads
the seed's input as sequence 32 x batch 128; the batch axis here is the seed's first one."""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class TransformerBlock(nn.Module):
    def __init__(self, d_model=512, nhead=8):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, nhead)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),
            nn.Linear(4 * d_model, d_model),
        )

    def forward(self, x):
        x = self.norm1(x + self.attn(x, x, x)[0])
        x = self.norm2(x + self.ff(x))
        return x


@register_model("transformer_block", seed="001 (9.2)", default_batch=32,
                description="MHA(512, 8 heads) + LayerNorm + GELU MLP 512-2048-512; x = (batch, 128, 512)",
                sizes={"seq": (1, 65536, "sequence length")})
def build(batch, dtype, device, seq=128, d_model=512, nhead=8):
    model = TransformerBlock(d_model, nhead).to(device=device, dtype=dtype)
    x = torch.randn(batch, seq, d_model, device=device, dtype=dtype)
    return model, (x,)
