"""The figures of a sweep as data, without matplotlib (the Snakefile builds its DAG from
this): name -> (scope, report category). Scope `model`: one file per swept model;
`sweep`: one file for all. The modules of this package draw them (one per family of
figures, each a function (tables, model) -> matplotlib figure); report.plots binds each
name to its function and renders it from the written tables.

scopes(name, sweep) is the figure's files in one sweep: only the models (or the sweep)
where it has something to draw, judged from the sweep's plan (which models, variants and
sizes run on which device and backend), so that no figure is drawn empty."""
from __future__ import annotations

FIGURES = {
    "headline": ("model", "1. Headline"),
    "speedup_vs_batch": ("model", "1. Headline"),
    "speedup_breakdown": ("model", "2. Where the time goes"),
    "launch_overhead": ("model", "2. Where the time goes"),
    "idle_breakdown": ("model", "2. Where the time goes"),
    "kernels_per_iter": ("model", "3. Kernels and fusion"),
    "kernel_durations": ("model", "3. Kernels and fusion"),
    "over_fusion": ("sweep", "3. Kernels and fusion"),
    "roofline": ("sweep", "4. Roofline"),
    "crossover": ("sweep", "5. Crossover"),
    "compile_cost": ("sweep", "6. Compile cost"),
    "profiler_overhead": ("sweep", "7. Measurement"),
    "scaling": ("model", "8. Scaling"),
}
SWEEP = "all"


def plan(runs: list[dict], device: str, backend: str) -> dict:
    """A sweep's plan as scopes() reads it, from its runs (dicts with model, variant,
    batch, sizes: the size axes that differ from the model's defaults, {"dim": 1024}, and
    `skipped` for a pair not run): per model the variants that run and the number of
    values of each swept axis."""
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
    return {"device": device, "backend": backend, "models": models}


def _compared(m) -> bool:
    return "eager" in m["variants"] and len(m["variants"]) > 1


def _swept(m, n) -> bool:
    """An axis with n or more values."""
    return max(m["axes"].values()) >= n


def scopes(name: str, sweep: dict) -> list[str]:
    """The files (model names, or [SWEEP]) of figure name in the sweep plan()."""
    models = sweep["models"]
    cuda = sweep["device"] == "cuda"
    per_model = {
        "headline": lambda m: True,
        "speedup_vs_batch": _compared,
        "speedup_breakdown": _compared,
        "launch_overhead": lambda m: cuda,
        "idle_breakdown": lambda m: cuda,
        "kernels_per_iter": lambda m: True,
        "kernel_durations": lambda m: True,
        "scaling": lambda m: _swept(m, 3),
    }
    sweep_wide = {
        "over_fusion": cuda and sweep["backend"] == "nsys",
        "roofline": bool(models),
        "crossover": any(_compared(m) and _swept(m, 2) for m in models.values()),
        "compile_cost": any(_compared(m) for m in models.values()),
        "profiler_overhead": bool(models),
    }
    if FIGURES[name][0] == "model":
        return sorted(k for k, m in models.items() if per_model[name](m))
    return [SWEEP] if sweep_wide[name] else []
