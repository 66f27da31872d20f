"""One run's measured iterations under Nsight Compute (jobs.ncu_step; docs/ncu.md),
each report's results counted with analysis.readers.ncu_report.

    python workflow/scripts/ncu_profile.py --run-dir DIR --ncu NCU [--passes steady,cold,roofline,range]
        [--iters N] [--warmup N] [--timeout S] [--log F] [--top-kernels N [--top-share S] [--kernel-table CSV]]
        -- PYTHON -m fusionlab.runner ARGS...
"""
import sys

from fusionlab.analysis.readers import ncu_report
from fusionlab.jobs import ncu_step

if __name__ == "__main__":
    sys.exit(ncu_step.main(sys.argv[1:], count=ncu_report.count))
