"""Process-to-process noise (GPU machine): why does a host-bound configuration's wall
time per iteration differ 10-50% between processes when it varies a few percent within one?

Each measuring process times the same host-bound configurations (CONFIGS), interleaved
window by window, and records where its threads ran (/proc/self/task/*/stat) and how often
they were preempted. Processes run one at a time, in rounds over the placements
(PLACEMENTS), so each placement sees the same machine drift:

- `free`: no pinning, nothing else running (a user's own loop: the reference);
- `core`: pinned to one core thread whose SMT sibling is idle;
- `core+sibling_busy`: the same, with a busy loop on its SMT sibling;
- `slot`: pinned to the cores `slots.plan` gives one GPU now (the highest-numbered),
  with busy loops on every other core (the pipeline's start-ups and post-processing);
- `slot_whole_cores`: pinned to whole physical cores (both threads), busy loops on the
  other physical cores only.

    python benchmarks/process_noise.py run --out results/noise --rounds 6
    python benchmarks/process_noise.py report --out results/noise

`report` prints, per placement and configuration: the median over processes, their CV
(the noise between processes) and the median window CV (within one), and which threads
the slow processes had on which core.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the repository

CONFIGS = [("pointwise_heavy", "eager", 256), ("mlp", "eager", 2048)]
# the host probe (fusionlab.jobs.host_probe: pointwise_heavy's kind of Python and
# dispatcher work on the CPU, 8 floats, no GPU), timed as one more configuration: if its
# windows move with a host-bound GPU configuration's, the noise is the host's speed
YARDSTICK = ("host_probe", "cpu", 1)
WINDOWS, ITERS, WARMUP = 10, 200, 50
PLACEMENTS = ["free", "core", "core+sibling_busy", "slot", "slot_whole_cores"]


def siblings() -> dict[int, tuple[int, ...]]:
    """Each online core thread -> the threads of its physical core (sysfs topology)."""
    from fusionlab.jobs.slots import parse_cpus
    out = {}
    for c in sorted(os.sched_getaffinity(0)):
        path = f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"
        try:
            with open(path) as f:
                out[c] = tuple(parse_cpus(f.read().strip()))
        except OSError:
            out[c] = (c,)
    return out


def placement(name: str, sib: dict[int, tuple[int, ...]]) -> tuple[list[int] | None, list[int]]:
    """(cores to pin the measuring process to or None, cores to run busy loops on)."""
    from fusionlab.jobs.slots import plan
    cpus = sorted(sib)
    cores = sorted({s for s in sib.values()})            # physical cores, as thread tuples
    if name == "free":
        return None, []
    if name in ("core", "core+sibling_busy"):
        core = next((t for t in reversed(cores) if len(t) > 1), cores[-1])
        busy = [core[1]] if name == "core+sibling_busy" and len(core) > 1 else []
        return [core[0]], busy
    if name == "slot":
        slots, rest = plan(["0"], cpus)
        if not slots[0].cpus:
            raise SystemExit(f"placement slot: {len(cpus)} cores are too few for a GPU slot (slots.plan)")
        return list(slots[0].cpus), rest
    if name == "slot_whole_cores":
        mine = [c for t in cores[-2:] for c in t] if len(cores[-1]) > 1 else [t[0] for t in cores[-4:]]
        busy = [c for c in cpus if c not in mine]
        return mine, busy
    raise ValueError(f"placement {name!r}: one of {PLACEMENTS}")


def thread_cpus() -> dict[str, list]:
    """Each thread of this process: [name, last core it ran on, involuntary switches]."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/self/task/{tid}/status") as f:
                status = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
        except OSError:
            continue
        name = stat[stat.index("(") + 1: stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[tid] = [name, int(fields[36]), int(status.get("nonvoluntary_ctxt_switches", "0").strip())]
    return out


def parse_configs(text: str) -> list[tuple[str, str, int]]:
    """'model:variant:batch,...' -> [(model, variant, batch), ...]."""
    return [(m, v, int(b)) for m, v, b in (c.split(":") for c in text.split(",") if c)]


def one_process(cpus: list[int] | None, configs=CONFIGS) -> dict:
    """Time CONFIGS interleaved in this process; where its threads ran."""
    import torch
    from fusionlab.experiments.registry import MODELS, VARIANTS
    from fusionlab.jobs.host_probe import make_probe
    from fusionlab.runner.timing import time_windows, warm_up
    from fusionlab.jobs.slots import pin_process
    torch.manual_seed(0)
    steps = []
    for model, variant, batch in configs:
        net, inputs = MODELS[model].build(batch, torch.float32, "cuda")
        net.eval()
        fn = VARIANTS[variant].apply(net, inputs, {"compile_mode": "default", "dtype": "float32",
                                                   "device": "cuda", "mode": "inference"})

        def step(fn=fn, inputs=inputs):
            with torch.no_grad():
                fn(*inputs)
        steps.append(step)
    steps.append(make_probe(torch, passes=1))
    if cpus:
        pin_process(cpus)
    for step in steps:
        warm_up(step, torch.cuda.synchronize, WARMUP, 0.1)
    windows = [[] for _ in steps]
    steal = []
    for _ in range(WINDOWS):
        s0 = steal_ticks()
        for i, step in enumerate(steps):
            windows[i] += time_windows(step, torch.cuda.synchronize, 1, ITERS)
        steal.append(steal_ticks() - s0)
    return {"windows_ms": windows, "threads": thread_cpus(), "cpus": cpus, "steal_ticks": steal}


def steal_ticks() -> int:
    """The machine's CPU time stolen by the hypervisor so far (/proc/stat, clock ticks)."""
    try:
        with open("/proc/stat") as f:
            return int(f.readline().split()[8])
    except (OSError, IndexError, ValueError):
        return -1


def spin(cpu: int) -> subprocess.Popen:
    """A busy loop pinned to one core thread."""
    return subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])


def cmd_run(a) -> int:
    os.makedirs(a.out, exist_ok=True)
    sib = siblings()
    with open(os.path.join(a.out, "topology.json"), "w") as f:
        json.dump({str(k): v for k, v in sib.items()}, f)
    rows_path = os.path.join(a.out, "processes.jsonl")
    deadline = time.time() + a.budget_s
    for r in range(a.rounds):
        for name in a.placements.split(","):
            if time.time() > deadline:
                print("budget reached", flush=True)
                return 0
            cpus, busy = placement(name, sib)
            spinners = [spin(c) for c in busy]
            try:
                p = subprocess.run([sys.executable, __file__, "_one", json.dumps(cpus), "--configs", a.configs],
                                   cwd=ROOT, capture_output=True, text=True, timeout=180)
            except subprocess.TimeoutExpired:
                print(f"round {r} {name}: past 180 s, left out", flush=True)
                continue
            finally:
                for s in spinners:
                    s.kill()
                    s.wait()
            try:
                rec = json.loads(p.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                print(f"{name}: failed: {p.stderr[-400:]}", flush=True)
                continue
            rec.update(placement=name, round=r, busy=busy, configs=parse_configs(a.configs))
            with open(rows_path, "a") as f:
                f.write(json.dumps(rec) + "\n")
            meds = " ".join(f"{statistics.median(w):.4f}" for w in rec["windows_ms"])
            print(f"round {r} {name:18s} {meds}", flush=True)
    return 0


def cmd_report(a) -> int:
    rows = [json.loads(line) for line in open(os.path.join(a.out, "processes.jsonl"))]
    configs = [tuple(c) for c in rows[0].get("configs", CONFIGS)]
    print(f"{'placement':18s} {'config':28s} {'n':>2s} {'median ms':>9s} {'CV between':>10s} "
          f"{'CV within':>9s}  per-process medians")
    for name in PLACEMENTS:
        mine = [r for r in rows if r["placement"] == name]
        if not mine:
            continue
        for i, (model, variant, batch) in enumerate((configs + [YARDSTICK])[:len(mine[0]["windows_ms"])]):
            meds = [statistics.median(r["windows_ms"][i]) for r in mine]
            within = statistics.median(statistics.pstdev(r["windows_ms"][i]) / statistics.mean(r["windows_ms"][i])
                                       for r in mine)
            between = statistics.pstdev(meds) / statistics.mean(meds) if len(meds) > 1 else float("nan")
            print(f"{name:18s} {f'{model}/{variant}/{batch}':28s} {len(meds):2d} {statistics.median(meds):9.4f} "
                  f"{between:10.3f} {within:9.3f}  " + " ".join(f"{m:.3f}" for m in meds))
    yard = len(configs)
    for i, (model, variant, batch) in enumerate(configs if all(len(r["windows_ms"]) > yard for r in rows) else []):
        pairs = [(w, y) for r in rows for w, y in zip(r["windows_ms"][i], r["windows_ms"][yard])]
        per_proc = [(statistics.median(r["windows_ms"][i]), statistics.median(r["windows_ms"][yard])) for r in rows]
        print(f"correlation with the host yardstick, {model}/{variant}/{batch}: windows "
              f"{statistics.correlation(*zip(*pairs)):.2f}, process medians {statistics.correlation(*zip(*per_proc)):.2f}")
    print("\nspeedup over eager in the same process: CV between processes of the ratio of medians, "
          "and of the median of window-by-window ratios")
    for i, (model, variant, batch) in enumerate(configs):
        j = next((k for k, c in enumerate(configs) if c == (model, "eager", batch)), None)
        if variant == "eager" or j is None:
            continue
        of_medians = [statistics.median(r["windows_ms"][j]) / statistics.median(r["windows_ms"][i]) for r in rows]
        paired = [statistics.median(e / v for e, v in zip(r["windows_ms"][j], r["windows_ms"][i])) for r in rows]
        cv = lambda xs: statistics.pstdev(xs) / statistics.mean(xs)   # noqa: E731
        apart = [statistics.median(a["windows_ms"][j]) / statistics.median(b["windows_ms"][i])
                 for a in rows for b in rows if a is not b]
        print(f"  {model}/{variant}/{batch}: eager and {variant} in different processes "
              f"{statistics.median(apart):.3f} (CV {cv(apart):.3f})")
        print(f"  {model}/{variant}/{batch}: of medians {statistics.median(of_medians):.3f} (CV {cv(of_medians):.3f}), "
              f"paired {statistics.median(paired):.3f} (CV {cv(paired):.3f}): " + " ".join(f"{x:.2f}" for x in paired))
    print("steal ticks per round of windows:", sorted({t for r in rows for t in r.get("steal_ticks", [])}))
    print("\nthreads of each process (name@core, involuntary switches), slowest first, first config:")
    for r in sorted(rows, key=lambda r: -statistics.median(r["windows_ms"][0])):
        busy = sorted(r["threads"].values(), key=lambda t: -t[2])[:4]
        print(f"  {r['placement']:18s} {statistics.median(r['windows_ms'][0]):.4f} ms  "
              + ", ".join(f"{n}@{c} ({s})" for n, c, s in busy))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", default="results/noise")
    r.add_argument("--rounds", type=int, default=6)
    r.add_argument("--placements", default=",".join(PLACEMENTS))
    r.add_argument("--budget-s", type=float, default=400)
    p = sub.add_parser("report")
    p.add_argument("--out", default="results/noise")
    o = sub.add_parser("_one")
    o.add_argument("cpus")
    for sp in (r, o):
        sp.add_argument("--configs", default=",".join(f"{m}:{v}:{b}" for m, v, b in CONFIGS),
                        help="model:variant:batch,... timed interleaved in each process")
    a = ap.parse_args(argv)
    if a.cmd == "_one":
        print(json.dumps(one_process(json.loads(a.cpus), parse_configs(a.configs))))
        return 0
    return cmd_run(a) if a.cmd == "run" else cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
