"""fusionlab analysis: read nsys SQLite exports and torch.profiler traces into one
normalised trace, compute per-range metrics, tidy tables and figures."""
