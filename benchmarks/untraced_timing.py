"""The pipeline's wall times and speedups against plain untraced loops (GPU machine).

The command line of fusionlab.bench.untraced_timing (its docstring says what it measures and how);
the same as `python -m fusionlab.bench.untraced_timing`."""
import sys

from fusionlab.bench.untraced_timing import main

if __name__ == "__main__":
    sys.exit(main())
