"""`fusionlab analyse` of this tree against a named baseline commit, side by side in one
run: CPU time, wall time and peak RSS of each on the same reports, and their ratios.

    python benchmarks/million_kernels.py synthetic --kernels 1000000 --out 1M.sqlite
    python benchmarks/analyse_vs_baseline.py --baseline e00711a 1M.sqlite [10M.sqlite ...] [--repeat 3] [--json F]

The baseline (--baseline: a commit, or a folder holding that commit's files, as `git
archive` writes them, where the clone lacks its history) is checked out into a temporary
git worktree; each tool runs in its own
process (fusionlab.bench.million_kernels.run_tool: getrusage of the child), the two trees
alternating, --repeat times; the table shows each tree's best and the ratio this / baseline
(--json: every run's figures, and whether the two trees' outputs were byte for byte the same).
With bytecode caching on (PYTHONDONTWRITEBYTECODE unset) each tree runs once untimed first,
so that the timed runs read compiled modules, as an installed package does; the load
average before and after each report goes into --json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from fusionlab.bench.million_kernels import WRAP  # noqa: E402


def run(tree: str, report: str, out: str, label: str) -> dict:
    res = os.path.join(out, "rusage.json")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-c", WRAP, res, os.path.join(out, f"{label}.out"), sys.executable, "-m",
                    "fusionlab.analysis", "--json", report], check=True, env=env, cwd=tree)
    with open(res) as f:
        return json.load(f)


def _same_output(out: str) -> bool:
    """The two trees' last outputs are byte for byte the same."""
    with open(os.path.join(out, "baseline.out"), "rb") as a, open(os.path.join(out, "this.out"), "rb") as b:
        return a.read() == b.read()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("reports", nargs="+")
    p.add_argument("--baseline", default="e00711a", help="commit to compare with, or a folder of its files")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", help="file for every run's figures")
    a = p.parse_args(argv)
    cache = not os.environ.get("PYTHONDONTWRITEBYTECODE")
    record = {"baseline": a.baseline, "bytecode_cache": cache, "load_average": [os.getloadavg()], "reports": []}
    print(f"bytecode caching {'on' if cache else 'off (PYTHONDONTWRITEBYTECODE)'}; load average "
          f"{os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as d:
        tree = os.path.isdir(a.baseline)
        base = os.path.abspath(a.baseline) if tree else os.path.join(d, "baseline")
        if not tree:
            subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", base, a.baseline], check=True,
                           capture_output=True)
        try:
            print(f"{'report':28s} {'tree':10s} {'CPU s':>7s} {'wall s':>7s} {'peak MB':>8s}  rc")
            for rep in a.reports:
                got = {"baseline": [], "this": []}
                if cache:       # each tree's modules compiled once, untimed: every timed run reads bytecode
                    for label, tree in (("baseline", base), ("this", ROOT)):
                        run(tree, os.path.abspath(rep), d, label)
                for _ in range(a.repeat):
                    for label, tree in (("baseline", base), ("this", ROOT)):
                        got[label].append(run(tree, os.path.abspath(rep), d, label))
                best = {}
                for label, rs in got.items():
                    best[label] = {k: min(r[k] for r in rs) for k in ("cpu_s", "wall_s", "peak_rss_mb")}
                    b = best[label]
                    print(f"{os.path.basename(rep)[:28]:28s} {label:10s} {b['cpu_s']:7.2f} {b['wall_s']:7.2f} "
                          f"{b['peak_rss_mb']:8.0f}  {[r['rc'] for r in rs]}  (CPU s median "
                          f"{statistics.median(r['cpu_s'] for r in rs):.2f})")
                r = {k: best["this"][k] / best["baseline"][k] for k in best["this"]}
                same = _same_output(d)
                print(f"{'':28s} {'ratio':10s} {r['cpu_s']:7.2f} {r['wall_s']:7.2f} {r['peak_rss_mb']:8.2f}  "
                      f"output {'the same' if same else 'DIFFERS'}")
                record["load_average"].append(os.getloadavg())
                record["reports"].append({"report": rep, "bytes": os.path.getsize(rep), "runs": got, "best": best,
                                          "ratio": r, "same_output": same})
                if a.json:
                    with open(a.json, "w") as f:
                        json.dump(record, f, indent=1)
        finally:
            if not tree:
                subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", base], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
