"""Report: figures, summary and the comparison of two sweeps, drawn from the written tables."""
