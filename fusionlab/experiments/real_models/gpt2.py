"""GPT-2 small (transformers GPT2LMHeadModel, its default configuration: 12 layers, hidden
768, vocabulary 50257), random weights; input (batch, seq) token ids; output the logits."""
from fusionlab.experiments.real_models._hf import LastTensor, configured, tokens


def build(batch, dtype, device, seq=128, num_layers=12):
    """GPT-2 small with its LM head, transformers defaults; x = (batch, seq) token ids"""
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=num_layers)
    model = LastTensor(configured(GPT2LMHeadModel, config, dtype, device), "logits")
    return model, (tokens(batch, seq, config.vocab_size, device),)
