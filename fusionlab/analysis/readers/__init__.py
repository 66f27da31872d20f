"""Readers: nsys SQLite exports (row and columnar), nsys stats CSVs and torch.profiler traces, each into one normalised Trace."""
