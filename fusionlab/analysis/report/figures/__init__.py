"""The figures of a sweep, each recorded once, in its own module, as data read without
importing it (no matplotlib: the Snakefile builds its DAG from this): each module of this
package holds a FIGURES literal, one record per figure with its name (also the name of the
function that draws it, taking (tables, model) and returning a matplotlib figure;
report.plots imports it), scope (`model`: one file per swept model; `sweep`: one for
all), report category, what it needs to have something to draw (`needs`: a name in NEEDS,
judged from the sweep's plan), its caption's template (report.captions fills it with this
sweep's numbers) and what it shows (the figure table of docs/outputs.md, generated from the
records: `python -m fusionlab.analysis.report.figures`). A new figure is one new module here.

scopes(name, sweep) is the figure's files in one sweep: only the models (or the sweep)
where it has something to draw, judged from the sweep's plan (which models, variants and
sizes run on which device and backend), so that no figure is drawn empty."""
from __future__ import annotations

import ast
import os
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
    shows: str                 # one line for docs/outputs.md's figure table

    def __iter__(self):        # (scope, category), as the workflow's rules unpack it
        return iter((self.scope, self.category))

    def __getitem__(self, i):
        return (self.scope, self.category)[i]


def _compared(m, sweep=None) -> bool:
    return "eager" in m["variants"] and len(m["variants"]) > 1


def _swept(m, n) -> bool:
    """An axis with n or more values."""
    return max(m["axes"].values()) >= n


# what a figure needs to have something to draw, by the name its record gives:
# (model plan or None, sweep plan) -> bool
NEEDS = {
    "any": lambda m, sweep: True,
    "compared": _compared,
    "cuda": lambda m, sweep: sweep["device"] == "cuda",
    "models": lambda m, sweep: bool(sweep["models"]),
    "swept_3": lambda m, sweep: _swept(m, 3),
    "cuda_nsys": lambda m, sweep: sweep["device"] == "cuda" and sweep["backend"] == "nsys",
    "kernel_roofline": lambda m, sweep: bool(sweep.get("kernel_roofline")),
    "any_compared_swept_2": lambda m, sweep: any(_compared(x) and _swept(x, 2) for x in sweep["models"].values()),
    "any_compared": lambda m, sweep: any(_compared(x) for x in sweep["models"].values()),
}
HERE = os.path.dirname(os.path.abspath(__file__))


def module_records(path: str) -> list[dict]:
    """The FIGURES literal of a figure module, read from its source (no import)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "FIGURES" for t in node.targets):
            return ast.literal_eval(node.value)
    return []


def _registry() -> list[Figure]:
    """Every figure module's records, by report category (stable: module name, then the
    module's own order)."""
    out = []
    for name in sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".py") and not f.startswith("_")):
        for r in module_records(os.path.join(HERE, name + ".py")):
            if r["needs"] not in NEEDS:
                raise ValueError(f"figure {r['name']} ({name}.py): needs {r['needs']!r} is not one of {', '.join(NEEDS)}")
            out.append(Figure(r["name"], r["scope"], r["category"], f"{name}:{r['name']}", NEEDS[r["needs"]],
                              r["caption"], r["shows"]))
    return sorted(out, key=lambda f: f.category)


REGISTRY = _registry()
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


def docs_table() -> str:
    """The figure table docs/outputs.md holds between its `figures` markers: every figure,
    when it is drawn (per model or once for the sweep) and what it shows."""
    drawn = {"model": "per model", "sweep": "per sweep"}
    rows = ["| figure | drawn | shows |", "|---|---|---|"]
    rows += [f"| `{f.name}` | {drawn.get(f.scope, f.scope)} | {f.shows} |" for f in REGISTRY]
    return "\n".join(rows)
