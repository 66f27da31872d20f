"""Mutation score of the modules that compute what a user reads, by mutmut (configured in
pyproject.toml's [tool.mutmut]: the modules, the tests that may kill their mutants, the
pytest arguments and time limits).

    nice -n 15 python benchmarks/mutation.py MODULE [MODULE ...] [--max-children N]
    python benchmarks/mutation.py --list      # the modules [tool.mutmut] names

Each module runs in a copy of the checkout (its tracked and untracked files, the work of
the moment) in a temporary folder, where mutmut writes its mutants/: `mutmut run` of the
module's mutants, then `mutmut results`. Its record goes into
benchmarks/results/mutation/scores.json (one per module, replaced on each run): the date
and commit, the count of each status, the score (killed and timed out over all, the
mutants named in EQUIVALENT left out), each surviving mutant with its diff, and the run's
time.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCORES = os.path.join(ROOT, "benchmarks", "results", "mutation", "scores.json")

# mutants whose change no input can show (mutmut's name: the reason)
EQUIVALENT = {
    "fusionlab.core.kernel_class.x_kernel_class__mutmut_1":
        'full_name\'s default "" -> "XXXX": no class pattern matches "XXXX", as none matches ""',
    "fusionlab.core.kernel_class.x_kernel_class__mutmut_22":
        'str(full_name or "") -> str(full_name or "XXXX"): the same as above',
    "fusionlab.core.kernel_class.x_precision__mutmut_1":
        'full_name\'s default "" -> "XXXX": no precision pattern matches "XXXX"',
}
KILLED = ("killed", "timeout", "segfault")   # a test failed, ran past its limit, or crashed


def config() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["tool"]["mutmut"]


def dotted(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


def checkout_copy(dst: str) -> None:
    """The checkout's tracked and untracked (not ignored) files, benchmarks/results left out."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split("\n")
    for rel in files:
        if rel and not rel.startswith("benchmarks/results/") and os.path.isfile(os.path.join(ROOT, rel)):
            os.makedirs(os.path.dirname(os.path.join(dst, rel)) or dst, exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), os.path.join(dst, rel))
    # what the tests read from benchmarks/results
    for rel in ("benchmarks/results/h100-real-models-part2",):
        if os.path.isdir(os.path.join(ROOT, rel)):
            shutil.copytree(os.path.join(ROOT, rel), os.path.join(dst, rel))


def results(work: str) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=work,
                         capture_output=True, text=True).stdout
    return dict(re.findall(r"^\s*(\S+__mutmut_\d+): (.+?)\s*$", out, re.M))


def diff(work: str, name: str) -> str:
    out = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=work, capture_output=True,
                         text=True).stdout
    return "\n".join(x for x in out.splitlines() if x[:1] in "-+" and not x.startswith(("---", "+++")))


def score(module: str, max_children: int) -> dict:
    work = tempfile.mkdtemp(prefix="mutation-")
    try:
        checkout_copy(work)
        with open(os.path.join(work, "pyproject.toml")) as f:   # test files this checkout lacks left out
            text = f.read()
        for t in config()["pytest_add_cli_args_test_selection"]:
            if not os.path.exists(os.path.join(work, t)):
                text = re.sub(rf'\s*"{re.escape(t)}",?', "", text)
        with open(os.path.join(work, "pyproject.toml"), "w") as f:
            f.write(text)
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children),
                               f"{dotted(module)}.*"], cwd=work, capture_output=True, text=True)
        seconds = time.monotonic() - t0
        found = {k: v for k, v in results(work).items() if k.startswith(dotted(module) + ".")}
        if proc.returncode or not found:
            raise SystemExit(f"{module}: mutmut run failed ({proc.returncode}):\n{proc.stdout[-2000:]}"
                             f"{proc.stderr[-2000:]}")
        counts: dict[str, int] = {}
        for status in found.values():
            counts[status] = counts.get(status, 0) + 1
        equivalent = sorted(k for k in found if k in EQUIVALENT)
        counted = {k: v for k, v in found.items() if k not in EQUIVALENT}
        killed = sum(v in KILLED for v in counted.values())
        return {"module": module, "date": dt.date.today().isoformat(), "commit": commit(),
                "tool": f"mutmut {version()}", "mutants": len(found), "counts": counts,
                "equivalent": {k: EQUIVALENT[k] for k in equivalent},
                "score": round(killed / len(counted), 4) if counted else None,
                "seconds": round(seconds),
                "survivors": {k: diff(work, k) for k, v in sorted(counted.items()) if v not in KILLED}}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def version() -> str:
    from importlib.metadata import version as v
    return v("mutmut")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("modules", nargs="*")
    p.add_argument("--list", action="store_true", help="the modules pyproject.toml's [tool.mutmut] names")
    p.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    a = p.parse_args(argv)
    known = config()["only_mutate"]
    if a.list or not a.modules:
        print("\n".join(known))
        return 0
    os.makedirs(os.path.dirname(SCORES), exist_ok=True)
    for module in a.modules:
        if module not in known:
            p.error(f"{module} is not in [tool.mutmut] only_mutate")
        rec = score(module, a.max_children)
        scores = json.load(open(SCORES)) if os.path.exists(SCORES) else {}
        scores[module] = rec
        with open(SCORES, "w") as f:
            json.dump(dict(sorted(scores.items())), f, indent=1)
            f.write("\n")
        print(json.dumps({k: rec[k] for k in ("module", "mutants", "counts", "score", "seconds")}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
