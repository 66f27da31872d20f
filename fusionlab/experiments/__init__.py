"""What can run: the registry of models and variants (registry; its light metadata,
catalog), the models (models/, and real networks by import path, real_models/), the
variants and the hand-written kernels they apply (variants/, kernels/), and a model's
FLOPs and bytes (cost). Nothing here knows about a sweep or a profiler."""
