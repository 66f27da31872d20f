"""The benchmarks' measurement and checking code (benchmarks/*.py are their command lines).

A module here measures the pipeline against an independent oracle (a bare loop, plain
untraced processes, plain SQL) or replays a sweep's records; each runs as
`python -m fusionlab.bench.<module>` or `python benchmarks/<module>.py`. gpu_time.py is
the kernel benchmarks' timing (the GPU's time of a call, the copy bandwidth). The
package's top layer: it may import core, experiments and analysis, and nothing imports it. What each
benchmark showed is in benchmarks/results/README.md.
"""
