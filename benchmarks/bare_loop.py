"""The runner's timing windows against a hand-written bare loop, in one process.

The command line of fusionlab.bench.bare_loop (its docstring says what it measures and how);
the same as `python -m fusionlab.bench.bare_loop`."""
import sys

from fusionlab.bench.bare_loop import main

if __name__ == "__main__":
    sys.exit(main())
