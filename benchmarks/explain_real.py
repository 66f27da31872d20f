"""The gap ledger and the attribution checked on a real-network sweep: `python
benchmarks/explain_real.py RESULTS` after `snakemake all --configfile
config/explain-real.yaml`. Prints, per run, the shares of its kernel time attributed to a
module path and to a source line of the model's, and placed on the training loop's own parts
(the loss, the optimizer step, zero_grad: analysis.sweep.attribution.coverage); per configuration
and compiled variant, the gap ledger's sentence and whether its residual is within
RESIDUAL_OK of the gap or inside the gap's interval (analysis.sweep.gap_ledger), and the
three module paths (layer indices folded) the variant changed most, with their times.
Exits 1 where a run has under MODULE_MIN of its time on a module path or the loop's parts
(module + loop), or under SOURCE_MIN on a source line or the loop's parts (source + loop: a
loop part's rows carry the runner's line, not the model's), or fewer than LEDGER_MIN of the
configurations explain their residual."""
import os
import sys

import pandas as pd

from fusionlab.analysis.sweep import attribution

MODULE_MIN, SOURCE_MIN, LEDGER_MIN = 0.99, 0.95, 0.90


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    tables = os.path.join(argv[0], "tables")
    table = attribution.read(os.path.join(tables, attribution.FILE))
    cov = attribution.coverage(table)
    ok = True
    print("attribution: run, kernel time per iteration, module share, source share, loop share "
          f"(judged: module + loop >= {MODULE_MIN:.0%}, source + loop >= {SOURCE_MIN:.0%})")
    for r in cov.to_dict("records"):
        good = (r["module_share"] + r["loop_share"] >= MODULE_MIN
                and r["source_share"] + r["loop_share"] >= SOURCE_MIN)
        ok &= good
        print(f"  {'ok  ' if good else 'LOW '}{r['run']}: {r['time_us']:.0f} us, module {r['module_share']:.2%}, "
              f"source {r['source_share']:.2%}, loop {r['loop_share']:.2%}")
    print("most changed module paths (layer indices folded), eager -> variant:")
    for key, g in attribution.movers(table, n=3, folded=True).groupby(
            [*attribution.CONFIG, "variant"], dropna=False, sort=True):
        head = " ".join(str(k) for k in key if str(k) not in ("", "nan"))
        parts = [f"{m['module']} {m['eager_us'] / 1e3:.3f} -> {m['variant_us'] / 1e3:.3f} ms "
                 f"({m['delta_us'] / 1e3:+.3f})" for m in g.sort_values("rank").to_dict("records")]
        print(f"  {head}: " + "; ".join(parts))
    ledger_csv = os.path.join(tables, "gap_ledger.csv")
    if os.path.exists(ledger_csv):
        ledger = pd.read_csv(ledger_csv)
        total = ledger[ledger["term"] == "total"]
        print("gap ledger: configuration, residual explained, sentence")
        for r in total.to_dict("records"):
            print(f"  {'ok  ' if r['residual_explained'] else 'OPEN'}{r['model']} {r['variant']} "
                  f"{r.get('mode', '')} {r.get('dtype', '')}: {r['sentence']}")
        n = int(total["residual_explained"].astype(bool).sum())
        share = n / len(total) if len(total) else 0.0
        ok &= share >= LEDGER_MIN
        print(f"residual explained on {n} of {len(total)} configurations ({share:.0%}; needs {LEDGER_MIN:.0%})")
    else:
        print(f"no {ledger_csv}")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
