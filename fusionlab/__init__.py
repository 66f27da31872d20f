"""fusionlab: measure GPU operator fusion in PyTorch.

Layers, following the data (nothing imports upward):
    fusionlab.core         the NVTX contract and atomic file writes (no torch, no pandas)
    fusionlab.experiments  config -> sweep -> one experiment (models, variants, the runner)
    fusionlab.analysis     a recorded profile -> metrics -> tables -> figures and summary;
                           reads files only, imports nothing from experiments
    fusionlab.cli          the `fusionlab` command
"""
__version__ = "0.5.0"
