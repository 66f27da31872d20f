"""The reference: the model as written, run op by op."""
from fusionlab.experiments.registry import register_variant


@register_variant("eager", description="PyTorch eager mode (the reference every variant is checked against)")
def apply(model, example_inputs, options):
    return model
