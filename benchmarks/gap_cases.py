"""Whether the gap ledger ranks each known-cause case's cause first: `python
benchmarks/gap_cases.py RESULTS [CONFIG]` after `snakemake all --configfile
config/gap_cases.yaml` (CONFIG: that file, by default). Prints each case's top-ranked term,
the expected ones (examples/slow_compile/*.py EXPECTED) and its sentence; exit 1 where a
case's top term is not its cause or it has no ledger row."""
import os
import sys

import pandas as pd
import yaml

from fusionlab.analysis.sweep import gap_ledger

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    results = argv[0]
    config = argv[1] if len(argv) > 1 else os.path.join(ROOT, "config", "gap_cases.yaml")
    with open(config) as f:
        cfg = yaml.safe_load(f)
    # factory paths are the checkout's (where snakemake runs), wherever the config file is
    expected = gap_ledger.expected_causes(cfg.get("import_models", {}), ROOT)
    ledger = pd.read_csv(os.path.join(results, "tables", "gap_ledger.csv"))
    v = gap_ledger.case_verdicts(ledger, expected)
    for r in v.to_dict("records"):
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {r['model']} {r['variant']}: top {r['top'] or '-'} "
              f"(expected {r['expected']}): {r['sentence']}")
    total = ledger[ledger["term"] == "total"]
    print(f"{int(v['ok'].sum())} of {len(v)} cases ranked their cause first; residual explained on "
          f"{int(total['residual_explained'].astype(bool).sum())} of {len(total)} configurations")
    return 0 if v["ok"].all() else 1


if __name__ == "__main__":
    sys.exit(main())
