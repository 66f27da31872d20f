"""python -m fusionlab.runner: one experiment (cli)."""
import sys

from fusionlab.runner.cli import main

sys.exit(main())
