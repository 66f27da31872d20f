"""One decoder block of a Llama-style model at Llama-2-7B's widths (transformers LlamaModel
with one layer: hidden 4096, MLP 11008 SwiGLU, 32 heads, RMSNorm, rotary positions, the
token embedding before it and the final norm after it), random weights; input (batch, seq)
token ids; output the last hidden state."""
from fusionlab.experiments.real_models._hf import LastTensor, configured, tokens


def build(batch, dtype, device, seq=512, hidden=4096, num_layers=1):
    """Llama-2-7B-wide decoder block(s), transformers LlamaModel; x = (batch, seq) token ids"""
    from transformers import LlamaConfig, LlamaModel
    heads = max(1, hidden // 128)
    config = LlamaConfig(hidden_size=hidden, intermediate_size=(hidden * 11008) // 4096, num_attention_heads=heads,
                         num_key_value_heads=heads, num_hidden_layers=num_layers, vocab_size=32000)
    model = LastTensor(configured(LlamaModel, config, dtype, device), "last_hidden_state")
    return model, (tokens(batch, seq, config.vocab_size, device),)
