"""fusionlab.runner: one experiment in one process, recorded in run.json.

    python -m fusionlab.runner --model mlp --variant compile --batch 128 --out run.json

Modules, one job each:
  spec         ExperimentSpec: the command line as a frozen record
  cli          the flags, checked, as an ExperimentSpec; main
  experiment   the run in order (build, check, warm-up, timing, measured range) and its process
  check        the correctness check against eager
  timing       the untraced timing loop: windows, paired windows, the harness's cost
  record       run.json's fields: identity, timing record, peak memory, failures
  process      phases, time limit, cores, GPU slots, fault injection
  environment  versions, the GPU's identity
  introspect   what torch.compile did

The names below are the package's interface for code outside it (the `fusionlab`
command, the benchmarks)."""
from fusionlab.runner import process  # noqa: F401  (first: its import time is the process's start)
from fusionlab.runner.check import check_against_eager, compare, make_step  # noqa: F401
from fusionlab.runner.cli import main, parse_args  # noqa: F401
from fusionlab.runner.environment import versions  # noqa: F401
from fusionlab.runner.experiment import build, timed_loops  # noqa: F401
from fusionlab.runner.spec import ExperimentSpec  # noqa: F401
