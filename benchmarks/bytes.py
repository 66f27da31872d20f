"""DRAM bytes with their spread on a GPU (docs/ncu.md): the pieces benchmarks/gpu/bytes.sh runs.

    python benchmarks/bytes.py plain --model softmax --batch 1024 [--variant eager] [--iters 3]
        a plain script of the model (registry build, warm-up, ITERS iterations inside the
        NVTX range `measure`), for `ncu --csv` by hand;
    python benchmarks/bytes.py profile --out DIR --model M --variant V --batch B [--passes steady,cold]
        the step (jobs.ncu_step) on the runner in DIR, then DIR/traffic.json;
    python benchmarks/bytes.py hand --csv FILE --iters N
        per-iteration DRAM bytes of `ncu --csv --page raw` output (the median over iterations;
        kernels that ran once before the repeating iterations are counted apart);
    python benchmarks/bytes.py tables --work DIR --out OUTDIR
        OUTDIR/bytes.csv (every DIR/bytes/*/traffic.json with the model's bytes_fused and
        bytes_unfused), kernel_roofline.csv and kernel_roofline_<model>.png (the per-kernel
        roofline of the runs with a roofline pass);
    python benchmarks/bytes.py summary --work DIR --out FILE
        one markdown table of every DIR/**/traffic.json (steady and cold, median and range,
        beside the model's bytes) with the cost ratio and by-hand figures.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys


def plain(a) -> int:
    import torch
    from fusionlab.experiments.registry import MODELS, VARIANTS
    model, inputs = MODELS[a.model].build(a.batch, torch.float32, "cuda")
    fn = VARIANTS[a.variant].apply(model.eval(), inputs, {}) if a.variant != "eager" else model
    with torch.no_grad():
        for _ in range(5):
            fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("measure")
        for _ in range(a.iters):
            fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    return 0


def profile(a) -> int:
    from fusionlab.analysis.readers import ncu_report
    from fusionlab.analysis.run import traffic
    from fusionlab.jobs import ncu_step
    from fusionlab.plan import sweep
    os.makedirs(a.out, exist_ok=True)
    runner = [sys.executable, "-m", "fusionlab.runner", "--model", a.model, "--variant", a.variant,
              "--batch", str(a.batch), "--device", "cuda", "--warmup", "5", "--warmup-min-s", "0"]
    ncu_step.run(a.out, sweep.ncu_path() or "ncu", runner, a.passes.split(","), a.iters, 5, 300,
                 count=ncu_report.count)
    row, kernels = traffic.compute(os.path.join(a.out, "ncu.json"))
    row.update(model=a.model, variant=a.variant, batch=a.batch)
    with open(os.path.join(a.out, "traffic.json"), "w") as f:
        json.dump(row, f, indent=1)
    kernels.to_csv(os.path.join(a.out, "traffic.csv"), index=False)
    print(json.dumps({k: row[k] for k in ("dram_bytes_measured", "dram_bytes_steady_min", "dram_bytes_steady_max",
                                          "dram_bytes_cold", "dram_bytes_cold_min", "dram_bytes_cold_max",
                                          "ncu_status", "ncu_note")}))
    return 0


def iteration_split(names: list[str], iters: int) -> tuple[int, int] | None:
    """(lead, period): the kernels in launch order as `lead` kernels that ran once (a first
    iteration's lazy set-up: a library's workspace, a one-time copy) and then `iters`
    repeats of the same `period` names; the shortest such period. None where the tail is
    no repetition of `iters` equal iterations."""
    for period in range(1, len(names) // iters + 1):
        lead = len(names) - iters * period
        tail = names[lead:]
        if all(tail[i] == tail[i % period] for i in range(len(tail))):
            return lead, period
    return None


def hand(a) -> int:
    from fusionlab.analysis.readers import ncu_report
    rows = ncu_report.parse_raw_csv(open(a.csv).read())
    split = iteration_split([r["full_name"] for r in rows], a.iters) if rows else None
    lead, n = split or (0, 0)
    per = ([sum(r["dram_read_bytes"] + r["dram_write_bytes"] for r in rows[lead + i * n:lead + (i + 1) * n])
            for i in range(a.iters)] if n else [])
    print(json.dumps({"kernels": len(rows), "kernels_once": lead, "kernels_per_iteration": n, "per_iteration": per,
                      "median": statistics.median(per) if per else None}))
    return 0


def _model_bytes(model: str, batch: int) -> dict:
    """The cost model's bytes_fused and bytes_unfused of one configuration (fp32, inference)."""
    try:
        from fusionlab.experiments import cost
        c = cost.count(model, batch)
        return {"bytes_fused": c.get("bytes_fused"), "bytes_unfused": c.get("bytes_unfused")}
    except Exception as e:   # noqa: BLE001  a model the counter cannot run here: no model bytes
        return {"bytes_fused": None, "bytes_unfused": None, "model_note": str(e)[:120]}


def _runs(work: str) -> list[dict]:
    out = []
    for j in sorted(glob.glob(os.path.join(work, "bytes", "*", "traffic.json"))):
        with open(j) as f:
            r = json.load(f)
        out.append({**r, **_model_bytes(r["model"], int(r["batch"])), "dir": os.path.dirname(j)})
    return out


def tables(a) -> int:
    import pandas as pd
    from fusionlab.analysis.report.figures.kernel_roofline import kernel_roofline
    from fusionlab.analysis.sweep import roofline
    os.makedirs(a.out, exist_ok=True)
    runs, frames = _runs(a.work), []
    for r in runs:
        keys = dict(model=r["model"], variant=r["variant"], batch=r["batch"], size="default", mode="inference",
                    dtype="float32", backend="ncu", device="cuda")
        r.update(keys)
        try:
            frames.append(pd.read_csv(os.path.join(r["dir"], "traffic.csv")).assign(**keys))
        except (FileNotFoundError, pd.errors.EmptyDataError):
            pass
    pd.DataFrame(runs).to_csv(os.path.join(a.out, "bytes.csv"), index=False)
    if not frames:
        return 0
    k = pd.concat(frames, ignore_index=True)
    roofline.kernel_roofline(k).to_csv(os.path.join(a.out, "kernel_roofline.csv"), index=False)
    t = {"kernels": k, "runs": pd.DataFrame(runs), "speedups": pd.DataFrame()}
    for m in sorted({r["model"] for r in runs}):
        try:
            kernel_roofline(t, m).savefig(os.path.join(a.out, f"kernel_roofline_{m}.png"), dpi=150)
            print(f"figure {m}: written")
        except Exception as e:   # noqa: BLE001  a model without a roofline pass
            print(f"figure {m}: {e}")
    return 0


def _mb(x) -> str:
    return "" if x is None else f"{x / 1e6:.3f}"


def summary(a) -> int:
    lines = ["# DRAM bytes per iteration (MB): steady and cold, median [min, max], beside the model's", "",
             "| run | steady median | steady min | steady max | cold median | cold min | cold max | cold replay | "
             "model fused | model unfused | passes | note |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in _runs(a.work):
        lines.append(f"| {r.get('model')} {r.get('variant')} {r.get('batch')} | {_mb(r.get('dram_bytes_measured'))} | "
                     f"{_mb(r.get('dram_bytes_steady_min'))} | {_mb(r.get('dram_bytes_steady_max'))} | "
                     f"{_mb(r.get('dram_bytes_cold'))} | {_mb(r.get('dram_bytes_cold_min'))} | "
                     f"{_mb(r.get('dram_bytes_cold_max'))} | {r.get('cold_replay') or ''} | "
                     f"{_mb(r.get('bytes_fused'))} | {_mb(r.get('bytes_unfused'))} | {r.get('ncu_passes')} | "
                     f"{(r.get('ncu_note') or '')[:80]} |")
    names = ["cost/ncu_cost.json", "hand.json", "versions.txt", "stages.txt"]
    names += sorted(os.path.relpath(p, a.work) for p in glob.glob(os.path.join(a.work, "hand_*.json")))
    for name in names:
        p = os.path.join(a.work, name)
        if os.path.exists(p):
            lines += ["", f"## {name}", "", "```", open(p).read().strip()[:4000], "```"]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("plain", "profile"):
        s = sub.add_parser(name)
        s.add_argument("--model", required=True)
        s.add_argument("--variant", default="eager")
        s.add_argument("--batch", type=int, required=True)
        s.add_argument("--iters", type=int, default=3)
        if name == "profile":
            s.add_argument("--out", required=True)
            s.add_argument("--passes", default="steady,cold")
    s = sub.add_parser("hand")
    s.add_argument("--csv", required=True)
    s.add_argument("--iters", type=int, default=3)
    for name in ("summary", "tables"):
        s = sub.add_parser(name)
        s.add_argument("--work", required=True)
        s.add_argument("--out", required=True)
    a = p.parse_args(argv)
    return {"plain": plain, "profile": profile, "hand": hand, "summary": summary, "tables": tables}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
