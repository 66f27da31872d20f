"""`fusionlab analyse` on a million-kernel nsys report: time and peak memory.

The command line of fusionlab.bench.million_kernels (its docstring says what it measures and how);
the same as `python -m fusionlab.bench.million_kernels`."""
import sys

from fusionlab.bench.million_kernels import main

if __name__ == "__main__":
    sys.exit(main())
