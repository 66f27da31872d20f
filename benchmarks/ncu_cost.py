"""What the Nsight Compute step costs a sweep (docs/ncu.md): the same sweep with the step
on and with it off (config key ncu.enabled), wall time of each Snakemake invocation, and
the seconds of each rule from its benchmark file.

    python benchmarks/ncu_cost.py --configfile config/ncu.yaml [MORE.yaml ...] --out DIR [--cores 8]
        [--side on|off|both]
    python benchmarks/ncu_cost.py ratio --on DIR_ON/ncu_cost.json --off DIR_OFF/ncu_cost.json --out FILE

`--side on` or `off` runs one of the two sweeps (two at once on two GPUs of one host:
benchmarks/gpu/ncu_cost.sh); `ratio` combines their records into one.

The config files follow the project config, in order, as snakemake's --configfile does.
Each sweep has its own empty Inductor and Triton caches (DIR/on-cache, DIR/off-cache), so
both compile cold. A sweep past --timeout is interrupted with its jobs (Snakemake and every
process it started, one process group), so none of them runs on into the next sweep; its
`last_output_s` is when its newest file was written (seconds after its start). Writes
DIR/ncu_cost.json (after each sweep) and prints the wall times and on / off.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict


def rule_seconds(results: str) -> dict:
    """Summed seconds per rule, from every run's benchmarks/*.tsv."""
    out = defaultdict(float)
    for tsv in glob.glob(os.path.join(results, "runs", "**", "benchmarks", "*.tsv"), recursive=True):
        with open(tsv) as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        if rows:
            out[os.path.basename(tsv)[:-4]] += float(rows[0]["s"])
    return dict(out)


def sweep(configfiles: list[str], results: str, cores: int, enabled: bool, timeout: float) -> dict:
    """One snakemake invocation into `results`, with compile caches of its own, emptied first."""
    overlay = f"{results}.yaml"
    with open(overlay, "w") as f:
        f.write(f"results: {results}\nncu:\n  enabled: {str(enabled).lower()}\n")
    cache = os.path.abspath(f"{results}-cache")
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache, "inductor"),
           "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
    cmd = ["snakemake", "all", "--cores", str(cores), "--configfile", *configfiles, overlay]
    t0, t0_unix = time.monotonic(), time.time()
    with open(f"{results}.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
    wall_s = round(time.monotonic() - t0, 1)
    if rc is None:
        stop_group(proc)
    return {"command": " ".join(cmd), "rc": rc, "wall_s": wall_s, "cache": cache,
            "last_output_s": round(newest_mtime(results) - t0_unix, 1), "rule_seconds": rule_seconds(results)}


def stop_group(proc: subprocess.Popen, grace: float = 60) -> None:
    """Interrupt Snakemake and its jobs (their process group), then kill what is left after
    Snakemake ended or `grace` seconds: a stopped sweep leaves nothing running beside the next one."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def newest_mtime(results: str) -> float:
    """When the newest file under `results` was written (unix seconds)."""
    return max((os.path.getmtime(os.path.join(d, f)) for d, _, fs in os.walk(results) for f in fs), default=0.0)


def ratio(res: dict) -> dict:
    """res (with `on` and `off` sweep records) with ratio_on_over_off and what it is: a
    sweep stopped at its timeout has no wall time; with the step's sweep stopped, the ratio
    is a lower bound."""
    on, off = res["on"], res["off"]
    res["ratio_on_over_off"] = round(on["wall_s"] / off["wall_s"], 3) if off["rc"] is not None and off["wall_s"] else None
    res["ratio_is"] = (None if res["ratio_on_over_off"] is None else
                       "a lower bound (the sweep with the step was stopped)" if on["rc"] is None else "measured")
    return res


def _summary(res: dict) -> str:
    return json.dumps({k: (v["wall_s"], v["rc"]) if isinstance(v, dict) else v for k, v in res.items()})


def combine(argv) -> int:
    p = argparse.ArgumentParser(description="the ratio of two one-sided records")
    p.add_argument("--on", required=True)
    p.add_argument("--off", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    with open(a.on) as f_on, open(a.off) as f_off:
        res = ratio({"on": json.load(f_on)["on"], "off": json.load(f_off)["off"]})
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(_summary(res))
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["ratio"]:
        return combine(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configfile", nargs="+", action="extend", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--cores", type=int, default=8)
    p.add_argument("--timeout", type=float, default=240)
    p.add_argument("--side", choices=["on", "off", "both"], default="both")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    res = {}
    for key, enabled in (("on", True), ("off", False)):
        if a.side not in (key, "both"):
            continue
        res[key] = sweep(a.configfile, os.path.join(a.out, key), a.cores, enabled, a.timeout)
        with open(os.path.join(a.out, "ncu_cost.json"), "w") as f:   # after each sweep
            json.dump(res, f, indent=1)
    if a.side == "both":
        ratio(res)
        with open(os.path.join(a.out, "ncu_cost.json"), "w") as f:
            json.dump(res, f, indent=1)
    print(_summary(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
