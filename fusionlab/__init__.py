"""fusionlab: measure GPU operator fusion in PyTorch.

Layers, following the data (nothing imports upward: tests/test_package.py):
    fusionlab.core         what every layer shares: the NVTX contract, atomic writes, run
                           keys, size labels, kernel classes (no torch, no pandas)
    fusionlab.experiments  what can run: the registry of models and variants, its catalog,
                           the hand-written kernels, a model's FLOPs and bytes
    fusionlab.jobs         one job's process around its experiment: a GPU slot, the
                           profiler wrappers, the host probe, the device's peaks
    fusionlab.runner       one experiment: build, check against eager, warm up, time, the
                           measured range -> run.json
    fusionlab.plan         a sweep's plan: config -> the machine and the runs, progress,
                           restore
    fusionlab.analysis     a recorded profile -> metrics -> tables -> figures and summary
                           (readers -> run -> sweep -> report); reads files only, imports
                           core alone
    fusionlab.bench        the benchmarks' code (benchmarks/*.py are its command lines)
    fusionlab.results      one object over a results folder: results.open(RESULTS)
    fusionlab.cli          the `fusionlab` command
"""
__version__ = "0.5.0"
