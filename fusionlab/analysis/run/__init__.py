"""Per-run metrics: one experiment's ranges, kernels, occupancy, fusion map and provenance."""
