"""Sweep tables: runs, speedups, statistics, decomposition, scaling and over-fusion over every run of a sweep."""
