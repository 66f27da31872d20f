"""BERT-base (transformers BertModel, its default configuration: 12 layers, hidden 768,
12 heads), random weights; input (batch, seq) token ids; output the last hidden state."""
from fusionlab.experiments.real_models._hf import LastTensor, configured, tokens


def build(batch, dtype, device, seq=128, num_layers=12):
    """BERT-base encoder, transformers defaults; x = (batch, seq) token ids"""
    from transformers import BertConfig, BertModel
    config = BertConfig(num_hidden_layers=num_layers)
    model = LastTensor(configured(BertModel, config, dtype, device), "last_hidden_state")
    return model, (tokens(batch, seq, config.vocab_size, device),)
