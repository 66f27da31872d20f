"""The validation of attribution on the hand-built cases (cases.py): per case and variant,
the time attributed to the op that the smaller size removes (in the larger size's runs)
against the measured change in kernel time per iteration between the two sizes, from
tables/attribution.csv of a sweep of config.yaml.

    python examples/attribution/check.py RESULTS [--tolerance 0.2]

One line per case and variant: attributed and measured (medians over repeats, with the
range over repeat pairs), their ratio and whether it is within the tolerance. Exits 1 where
any is not."""
import argparse
import itertools
import os
import re
import statistics
import sys

import pandas as pd

# model -> (size axis, its value with the op, without it, the op's module path); the value
# with the op is the factory's default (cases.py), which a run's size label leaves out
CASES = {"attr_chain": ("steps", 3, 2, "step.2"), "attr_matmuls": ("mms", 2, 1, "proj.1")}


def size_of(label: str, axis: str, default: int) -> int:
    """The axis's value in a size label ("steps2", "default": the factory's default)."""
    m = re.search(rf"(?:^|-){axis}(\d+)(?:-|$)", str(label))
    return int(m.group(1)) if m else default


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--tolerance", type=float, default=0.2)
    a = p.parse_args(argv)
    t = pd.read_csv(os.path.join(a.results, "tables", "attribution.csv"), keep_default_na=False)
    ok = True
    for (model, variant), g in t.groupby(["model", "variant"]):
        if model not in CASES:
            continue
        axis, with_op, without, module = CASES[model]
        g = g.assign(n=[size_of(s, axis, with_op) for s in g["size"]])
        totals = g.groupby(["n", "repeat"])["time_us"].sum()
        mine = g[(g["n"] == with_op) & (g["module"] == module)].groupby("repeat")["time_us"].sum()
        if with_op not in totals.index.get_level_values(0) or without not in totals.index.get_level_values(0):
            print(f"{model} {variant}: both sizes not run")
            ok = False
            continue
        deltas = [x - y for x, y in itertools.product(totals[with_op], totals[without])]
        delta, attributed = statistics.median(deltas), statistics.median(mine) if len(mine) else float("nan")
        ratio = attributed / delta if delta else float("nan")
        good = abs(ratio - 1) <= a.tolerance
        ok &= good
        print(f"{model} {variant}: {module} attributed {attributed:.1f} us "
              f"[{min(mine, default=float('nan')):.1f}, {max(mine, default=float('nan')):.1f}], removing it "
              f"saves {delta:.1f} us [{min(deltas):.1f}, {max(deltas):.1f}] (repeat pairs): ratio {ratio:.2f} "
              f"{'within' if good else 'OUTSIDE'} {a.tolerance:.0%}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
