"""Where a profiled run's time goes, from the records a sweep leaves behind.

The command line of fusionlab.bench.run_overhead (its docstring says what it measures and how);
the same as `python -m fusionlab.bench.run_overhead`."""
import sys

from fusionlab.bench.run_overhead import main

if __name__ == "__main__":
    sys.exit(main())
