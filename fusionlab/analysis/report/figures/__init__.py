"""The figures of a sweep, each registered once, as data without matplotlib (the
Snakefile builds its DAG from this): a Figure record per name with its scope (`model`:
one file per swept model; `sweep`: one for all), report category, the function that
draws it (`module:function` in this package, taking (tables, model) and returning a
matplotlib figure; report.plots imports it), what it needs to have something to draw
(`needs`, judged from the sweep's plan), its caption's template (report.captions fills
it with this sweep's numbers) and what it shows (the README's and docs/outputs.md's
figure lists, which a test checks against these records).

scopes(name, sweep) is the figure's files in one sweep: only the models (or the sweep)
where it has something to draw, judged from the sweep's plan (which models, variants and
sizes run on which device and backend), so that no figure is drawn empty."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Figure:
    name: str
    scope: str                 # model | sweep
    category: str              # the report's section
    draws: str                 # module:function in fusionlab.analysis.report.figures
    needs: Callable            # (model plan or None, sweep plan) -> bool: something to draw
    caption: str               # template, filled by report.captions
    shows: str                 # one line for the README and docs/outputs.md

    def __iter__(self):        # (scope, category), as the workflow's rules unpack it
        return iter((self.scope, self.category))

    def __getitem__(self, i):
        return (self.scope, self.category)[i]


def _compared(m, sweep=None) -> bool:
    return "eager" in m["variants"] and len(m["variants"]) > 1


def _swept(m, n) -> bool:
    """An axis with n or more values."""
    return max(m["axes"].values()) >= n


def _cuda(m, sweep) -> bool:
    return sweep["device"] == "cuda"


def _any(m, sweep) -> bool:
    return True


REGISTRY = [
    Figure("headline", "model", "1. Headline", "headline:headline", _any,
           "Time per iteration of {model} ({configs} configurations drawn; {variants}), untraced, split into "
           "{split}, with the speedup over eager (paired where paired) and its interval; a black tick on a "
           "variant's bar marks the eager time its speedup uses (eager timed beside it where paired; eager's "
           "own bar is its own processes' time): {best}.",
           "time per iteration of eager and each variant (kernel time and exposed host time) with the speedup "
           "and, as a tick, the eager time it uses"),
    Figure("speedup_vs_batch", "model", "1. Headline", "speedup:speedup_vs_batch", _compared,
           "Speedup over eager of each variant of {model} ({configs} configurations drawn): the paired speedup "
           "where the variant was paired, solid, with its interval (95% CI from {ci_min} or more repeats, else the "
           "range of the repeats); across processes dotted, as a diagnostic. Verdicts: {verdicts}; {best}.",
           "the speedup over eager against batch, per variant, with its named interval; hollow: inconclusive"),
    Figure("speedup_breakdown", "model", "2. Where the time goes", "speedup:speedup_breakdown", _compared,
           "Where the time saved per iteration of {model} comes from ({configs} configurations drawn): exposed "
           "host time, memory traffic removed (measured or modelled bytes, as named in tables/headline.csv), "
           "other kernel time, the host-speed difference between processes and the remainder add up to the time "
           "saved that the headline speedup gives; {best}.",
           "the signed parts of the time saved (exposed host time, memory traffic, other kernel time, host-speed "
           "difference, remainder) adding up to it"),
    Figure("launch_overhead", "model", "2. Where the time goes", "launch:launch_overhead", _cuda,
           "Exposed host time per iteration of {model} (the GPU waiting on the host), against the untraced wall "
           "time; at most {host_max} of an iteration. The number at each point: exposed host time per launch "
           "call.",
           "exposed host time against the untraced wall time, with host time per launch"),
    Figure("idle_breakdown", "model", "2. Where the time goes", "launch:idle_breakdown", _cuda,
           "The untraced iteration of {model} split into kernel time, exposed host time, kernel wait and other "
           "idle; the black tick is the busy share under tracing (a diagnostic: tracing inflates host time). "
           "Exposed host time reaches {host_max}.",
           "the untraced wall time split into kernel time, kernel wait and exposed host time"),
    Figure("kernels_per_iter", "model", "3. Kernels and fusion", "kernels:kernels_per_iter", _any,
           "Kernels per iteration of {model} per variant (medians over repeats): {kernels}.",
           "kernels launched per iteration, eager against each variant"),
    Figure("kernel_durations", "model", "3. Kernels and fusion", "kernels:kernel_durations", _any,
           "Each kernel of {model} at its largest swept configuration: duration per call, calls per iteration "
           "written beside it (first repeat). Kernels per iteration: {kernels}.",
           "the distribution of kernel durations: fusion makes fewer, longer kernels"),
    Figure("over_fusion", "sweep", "3. Kernels and fusion", "overfusion:over_fusion",
           lambda m, sweep: sweep["device"] == "cuda" and sweep["backend"] == "nsys",
           "Every GPU kernel's theoretical occupancy against its run's achieved bandwidth; fused kernels filled, "
           "spills ringed red, likely over-fusion labelled.",
           "each fused kernel's occupancy against its run's achieved bandwidth (red ring: spills)"),
    Figure("roofline", "sweep", "4. Roofline", "roofline:roofline", lambda m, sweep: bool(sweep["models"]),
           "Each configuration (median of repeats) under the roofs measured on this device, with its batch size; "
           "{above}.",
           "achieved FLOP rate against arithmetic intensity, under the measured ceilings"),
    Figure("kernel_roofline", "model", "4. Roofline", "kernel_roofline:kernel_roofline",
           lambda m, sweep: bool(sweep.get("kernel_roofline")),
           "Each kernel of {model} (the top kernels by time under Nsight Compute, the rest summed) at its DRAM "
           "intensity (filled, cold bytes) and its L2 intensity (hollow), achieved FLOP/s counted as Nsight "
           "Compute's roofline counts them, under the GPU's own peak-sustained roofs from the same report; the "
           "percentage is the kernel's fraction of its roof (compute roof past the ridge, bandwidth below it); "
           "crosses are the model's estimate.",
           "each kernel's achieved FLOP/s at its DRAM and L2 intensity under the GPU's own roofs"),
    Figure("crossover", "sweep", "5. Crossover", "crossover:crossover",
           lambda m, sweep: any(_compared(x) and _swept(x, 2) for x in sweep["models"].values()),
           "The headline speedup of each model and variant along its swept axis; a crossover lies between the "
           "two values where the verdict turns from slower to faster. Verdicts: {verdicts}.",
           "where each variant starts and stops beating eager along each axis"),
    Figure("compile_cost", "sweep", "6. Compile cost", "compile_cost:compile_cost",
           lambda m, sweep: any(_compared(x) for x in sweep["models"].values()),
           "Compilation latency ({compile}) and the iterations it takes to pay back (compile latency / time saved "
           "per iteration, for speedups faster by their interval: {even}).",
           "compilation latency against the speedup it buys"),
    Figure("profiler_overhead", "sweep", "7. Measurement", "profiler:profiler_overhead",
           lambda m, sweep: bool(sweep["models"]),
           "Wall time per iteration under tracing over the untraced loop, per run: {prof}. Wall times, speedups "
           "and idle shares come from the untraced loop.",
           "traced / untraced wall time per run"),
    Figure("scaling", "model", "8. Scaling", "scaling:scaling", lambda m, sweep: _swept(m, 3),
           "The scaling law t = a + b * size^k of {model}'s untraced wall time and GPU time along each axis with "
           "3 or more sizes; k with its 95% CI in the legend.",
           "time per iteration against each swept size, with the fitted law"),
]
FIGURES = {f.name: f for f in REGISTRY}
SWEEP = "all"


def plan(runs: list[dict], device: str, backend: str, kernel_roofline: bool = False) -> dict:
    """A sweep's plan as scopes() reads it, from its runs (dicts with model, variant,
    batch, sizes: the size axes that differ from the model's defaults, {"dim": 1024}, and
    `skipped` for a pair not run): per model the variants that run and the number of
    values of each swept axis; kernel_roofline: whether the Nsight Compute step runs (or
    is read) with its roofline pass."""
    models: dict = {}
    for r in runs:
        if r.get("skipped"):
            continue
        m = models.setdefault(r["model"], {"variants": set(), "runs": []})
        m["variants"].add(r["variant"])
        m["runs"].append(r)
    for m in models.values():
        names = {a for r in m["runs"] for a in (r.get("sizes") or {})}
        m["axes"] = {"batch": len({r["batch"] for r in m["runs"]}),
                     **{a: len({(r.get("sizes") or {}).get(a, "default") for r in m["runs"]}) for a in names}}
        del m["runs"]
    return {"device": device, "backend": backend, "models": models, "kernel_roofline": kernel_roofline}


def scopes(name: str, sweep: dict) -> list[str]:
    """The files (model names, or [SWEEP]) of figure name in the sweep plan()."""
    f = FIGURES[name]
    if f.scope == "model":
        return sorted(k for k, m in sweep["models"].items() if f.needs(m, sweep))
    return [SWEEP] if f.needs(None, sweep) else []
