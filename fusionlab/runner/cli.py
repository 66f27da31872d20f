"""The runner's command line: its flags, checked, as an ExperimentSpec.

    python -m fusionlab.runner --model mlp --variant compile --batch 128 --out run.json

Runs with or without Snakemake and with or without a profiler around it. The process
always writes run.json and exits 0 for an experiment that fails in a known way (status
oom / error / unsupported / incorrect), so one bad experiment never stops a sweep. It
exits non-zero only on bad arguments (2), or 3 when its time limit stopped it.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from fusionlab.core import sizes as size_labels
from fusionlab.core.args import OneLineParser
from fusionlab.core.axes import DTYPES, MODES, PROFILERS
from fusionlab.jobs import slots as gpu_slots
from fusionlab.runner import experiment, process
from fusionlab.runner.spec import ExperimentSpec

DESCRIPTION = "The runner of one experiment: build, check against eager, warm up, measure."


PROG = "python -m fusionlab.runner"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The runner's flags (one per ExperimentSpec field); prog: the command's name in its
    usage and errors."""
    from fusionlab.experiments.registry import MODELS, VARIANTS
    p = OneLineParser(prog=prog, description=DESCRIPTION)
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--model-from", metavar="ENTRY",
                   help="the model is named by import path: its config entry as JSON, "
                        '{"factory": "package.module:build", ...} (registry.import_model)')
    p.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    p.add_argument("--batch", required=True, type=int)
    p.add_argument("--size", default="default", metavar="LABEL",
                   help="the model's other sizes: default, or e.g. dim1024-num_layers8 (core.sizes)")
    p.add_argument("--mode", default="inference", choices=MODES)
    p.add_argument("--dtype", default="float32", choices=DTYPES)
    p.add_argument("--warmup", default=50, type=int)
    p.add_argument("--warmup-min-s", default=0.1, type=float,
                   help="warm up for at least this many seconds too (a time floor over --warmup)")
    p.add_argument("--iters", default=200, type=int)
    p.add_argument("--repeat", default=0, type=int, help="repeat index (recorded only)")
    p.add_argument("--seed", default=0, type=int)
    p.add_argument("--windows", default=5, type=int,
                   help="untraced timing windows of --iters iterations each, before the measured range")
    p.add_argument("--paired-eager", action="store_true",
                   help="time eager's windows between the variant's, in this process: a paired speedup")
    p.add_argument("--paired-ci", default=0.02, type=float, metavar="FRAC",
                   help="with --paired-eager: add pairs of windows until the paired ratio's 95%% CI is "
                        "within FRAC of it (0: exactly --windows pairs)")
    p.add_argument("--timing-max-s", default=10.0, type=float, metavar="S",
                   help="with --paired-ci: add no pair after the paired windows have taken S seconds")
    p.add_argument("--pin-cpus", default="none", metavar="auto|none|LIST",
                   help="cores to pin the process to (none; auto: two cores on cuda, none on the CPU; or a list)")
    p.add_argument("--slots", metavar="GPU=CORES[/...]",
                   help="the sweep's GPU slots (jobs.slots): claim one GPU, and measure only "
                        "while holding its lock, on its cores; ignored under a scheduler (SLURM)")
    p.add_argument("--capture-range", action="store_true",
                   help="under `nsys profile --capture-range=cudaProfilerApi`: open it around the measured range")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    p.add_argument("--profiler", default="none", choices=PROFILERS,
                   help="which profiler wraps this run (nsys: run under `nsys profile`)")
    p.add_argument("--compile-mode", default="default")
    p.add_argument("--optimizer", default="none", choices=("none", "sgd"),
                   help="train mode: also take an optimizer step (SGD, lr 1e-3) each iteration")
    p.add_argument("--compile-debug", metavar="DIR",
                   help="keep TORCH_COMPILE_DEBUG artifacts (output_code.py, ir_post_fusion.txt) under DIR")
    p.add_argument("--timeout", default=0, type=float, metavar="S",
                   help="time limit in seconds (0: none): a run still going after S seconds "
                        "is recorded `timeout` and stopped")
    p.add_argument("--trace", help="Chrome trace to write (with --profiler torch)")
    p.add_argument("--out", required=True, help="run.json to write")
    return p


def _import_named_model(argv: list, prog: str = PROG) -> None:
    """Register the model --model-from names (under --model's name) before the flags are
    parsed, so --model's choices hold it; one-line error and exit 2 where it cannot."""
    import json
    from fusionlab.experiments import registry
    if "--model-from" not in argv or "--model" not in argv:
        return
    try:
        entry = json.loads(argv[argv.index("--model-from") + 1])
        name = argv[argv.index("--model") + 1]
        registry.import_models({name: entry})
    except (IndexError, ValueError, KeyError, TypeError) as e:
        OneLineParser(prog=prog).error(f"--model-from: {e}")


def parse_args(argv=None, prog: str = PROG) -> ExperimentSpec:
    """The command line as an ExperimentSpec; exits 2 (argparse's error) on a bad one."""
    from fusionlab.experiments.registry import MODELS
    argv = sys.argv[1:] if argv is None else list(argv)
    _import_named_model(argv, prog)
    p = build_parser(prog)
    a = p.parse_args(argv)
    if a.batch <= 0 or a.iters <= 0 or a.warmup < 0 or a.timeout < 0 or a.windows < 0:
        p.error("--batch and --iters must be positive, --warmup, --windows and --timeout non-negative")
    if not 0 <= a.timeout < float("inf"):   # (nan fails both)
        p.error(f"--timeout {a.timeout}: seconds, a finite number >= 0 (0: none)")
    if os.path.isdir(a.out) or a.out.endswith(os.sep):
        p.error(f"--out {a.out}: a folder; give the run.json file to write (e.g. {os.path.join(a.out, 'run.json')})")
    if a.trace and os.path.isdir(a.trace):
        p.error(f"--trace {a.trace}: a folder; give the trace .json file to write")
    if not (0 <= a.paired_ci < 1 and 0 <= a.timing_max_s <= 3600):   # (nan fails both)
        p.error("--paired-ci: a fraction from 0 to 1; --timing-max-s: seconds, from 0 to 3600")
    if not 0 <= a.warmup_min_s <= 600:   # (nan fails both)
        p.error(f"--warmup-min-s {a.warmup_min_s}: seconds, from 0 to 600")
    if a.pin_cpus not in ("auto", "none") and not all(c.isdigit() for c in a.pin_cpus.split(",")):
        p.error(f"--pin-cpus {a.pin_cpus!r}: auto, none or a list of core numbers such as 2,3")
    try:  # canonical label: a value equal to the default is not part of it
        a.size = size_labels.label(MODELS[a.model].resolve_sizes(a.size), MODELS[a.model].size_defaults())
    except ValueError as e:
        p.error(f"--size: {e}")
    if a.profiler == "torch" and not a.trace:
        p.error("--profiler torch needs --trace")
    if a.slots:
        try:
            gpu_slots.parse_slots(a.slots)
        except ValueError as e:
            p.error(str(e))
    fields = {f.name for f in dataclasses.fields(ExperimentSpec)}
    return ExperimentSpec(**{k: v for k, v in vars(a).items() if k in fields})


def main(argv=None, prog: str = PROG) -> int:
    """`python -m fusionlab.runner ...` and `fusionlab run ...`: one experiment."""
    phases = process.Phases()
    spec = parse_args(argv, prog)
    return experiment.execute(spec, phases)


if __name__ == "__main__":
    sys.exit(main())
