"""Do reused process ids, or several nsys sessions at once, make nsys's importer fail?

nsys's importer failed on 4 of the zoo's 142 runs on one H100, 6 processes in flight
("Multiple different definitions of the same VmTidToPidInfo"; benchmarks/results/h100-zoo-timing).
Two suspects: the machine's `kernel.pid_max` is 32768 and a 16-run sweep used 11,000 ids in
193 s, so over a long capture (a process waiting 2 minutes for the GPU lock with its
capture range open) ids wrap, and a thread id seen earlier can come back in another
process; and the 4 traces were imported within 25 s of each other, beside other sessions.

This runs a small traced process under `nsys profile` (the pipeline's trace options and
capture range) that starts threads (each launching a kernel) and child processes for a few
seconds, in arms:
  quiet       nothing else runs;
  wrap        processes outside the trace start threads as fast as they can meanwhile, so
              that the ids wrap during the capture;
  concurrent  N traced processes under N nsys sessions started together.
It prints, per run, whether nsys wrote a report and its importer's error.

Result (H100, nsys 2025.3.1): no failure. quiet 3 of 3 reports; wrap 3 of 3
(435,000-473,000 threads started during each capture: about 14 wraps); concurrent 12 of 12
at 6 sessions, 12 of 12 at 12. Neither suspect reproduces the failure alone; the cause is
not known, and the pipeline profiles such a run once more (jobs/nsys_profile.py).

    python benchmarks/nsys_pid_reuse.py --repeats 2 --seconds 8 --arms quiet,wrap,concurrent --out DIR
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time

from fusionlab.jobs.nsys_profile import nsys_error

TRACE = ["-t", "cuda,nvtx,osrt", "-s", "none", "--cpuctxsw=none",
         "--capture-range=cudaProfilerApi", "--capture-range-end=stop"]


def last_pid() -> int:
    """The most recently assigned process id (/proc/loadavg's last field)."""
    with open("/proc/loadavg") as f:
        return int(f.read().split()[-1])


def traced_body(seconds: float) -> None:
    """The traced process: threads that launch a kernel and exit, and child processes,
    for SECONDS inside the capture range."""
    import torch
    x = torch.ones(1, device="cuda")
    torch.cuda.synchronize()

    def work():
        x.add_(1)
        time.sleep(0.0005)

    torch.cuda.profiler.start()
    end = time.time() + seconds
    while time.time() < end:
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        subprocess.run(["/bin/true"], check=False)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def burn_ids(seconds: float, started) -> None:
    """Start and join threads for SECONDS (each takes a new process id); add their
    number to STARTED."""
    n, end = 0, time.time() + seconds
    while time.time() < end:
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        n += 1
    with started.get_lock():
        started.value += n


def nsys_command(rep: str, seconds: float) -> list[str]:
    return ["nsys", "profile", *TRACE, "--force-overwrite", "true", "-o", rep,
            sys.executable, os.path.abspath(__file__), "--traced", str(seconds)]


def outcome(rep: str, text: str) -> tuple[bool, str]:
    """Whether nsys wrote REP's report, and if not its error (as the pipeline records it)."""
    report = os.path.exists(rep + ".nsys-rep")
    return report, "" if report else nsys_error(text)


def concurrent_runs(out: str, i: int, seconds: float, n: int) -> list[dict]:
    """N traced processes under N nsys sessions started together (the sweep's processes in
    flight), their imports finishing within seconds of each other."""
    reps = [os.path.join(out, f"concurrent{n}-{i}-{k}") for k in range(n)]
    t0 = time.time()
    procs = [subprocess.Popen(nsys_command(rep, seconds), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for rep in reps]
    rows = []
    for k, (rep, p) in enumerate(zip(reps, procs)):
        report, err = outcome(rep, p.communicate()[0])
        rows.append({"arm": f"concurrent{n}", "run": f"{i}.{k}", "report": report, "error": err,
                     "threads_burnt": 0, "last_pid": "", "seconds": round(time.time() - t0, 1)})
    return rows


def one_run(out: str, arm: str, i: int, seconds: float, burners: int) -> dict:
    rep = os.path.join(out, f"{arm}-{i}")
    cmd = nsys_command(rep, seconds)
    first, started = last_pid(), mp.Value("l", 0)
    procs = []
    if arm == "wrap":
        procs = [mp.Process(target=burn_ids, args=(seconds + 4, started)) for _ in range(burners)]
        for p in procs:
            p.start()
    t0 = time.time()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    for p in procs:
        p.join()
    report, err = outcome(rep, res.stdout + res.stderr)
    return {"arm": arm, "run": i, "report": report, "error": err, "threads_burnt": started.value,
            "last_pid": f"{first}->{last_pid()}",
            "seconds": round(time.time() - t0, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traced", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--burners", type=int, default=4)
    ap.add_argument("--concurrent", type=int, default=6, help="nsys sessions at once (0: none)")
    ap.add_argument("--arms", default="quiet,wrap,concurrent")
    ap.add_argument("--out", default="results/nsys-pid-reuse")
    args = ap.parse_args()
    if args.traced is not None:
        traced_body(args.traced)
        return 0
    os.makedirs(args.out, exist_ok=True)
    print(f"pid_max {open('/proc/sys/kernel/pid_max').read().strip()}")
    print("arm,run,report,error,threads_burnt,last_pid,seconds")
    for arm in args.arms.split(","):
        for i in range(args.repeats):
            rows = (concurrent_runs(args.out, i, args.seconds, args.concurrent) if arm == "concurrent"
                    else [one_run(args.out, arm, i, args.seconds, args.burners)])
            for r in rows:
                print(",".join(str(v) for v in r.values()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
