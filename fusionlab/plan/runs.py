"""A sweep's runs: the validated config expanded into one dict per run (its keys name
its folder, RUN_PATTERN), each run's time limit, the runs that cannot happen on a device,
and for a regenerate the runs already recorded under the results folder.
"""
from __future__ import annotations

import itertools
import math
import os
import re

from fusionlab.core import axes, sizes
from fusionlab.experiments import catalog
from fusionlab.plan.config_checks import ConfigError


def timeout_s(cfg: dict, variant: str):
    """The time limit of one run of this variant: timeout_s_by_variant's, else timeout_s."""
    return cfg["timeout_s_by_variant"].get(variant, cfg["timeout_s"])


def size_labels(cfg: dict, model: str) -> list[str]:
    """The size label of every combination of the model's configured size values
    (core.sizes), in sweep order; ["default"] when none are configured."""
    configured = cfg.get("sizes", {}).get(model, {})
    defaults = {a: d["default"] for a, d in catalog.sizes(model).items()}
    names = sorted(configured)
    return list(dict.fromkeys(
        sizes.label(dict(zip(names, combo)), defaults)
        for combo in itertools.product(*(configured[n] for n in names))))


RUN_PATTERN = ("{backend}/{model}/{variant}/{mode}_{dtype}/bs{batch}{size}/r{repeat}")


def runs(cfg: dict, backend: str) -> list[dict]:
    """One dict per run; `size` is the run folder's size suffix (core.sizes: "" for the
    model's default sizes)."""
    return [dict(backend=backend, model=m, variant=v, mode=mode, dtype=dtype, batch=b,
                 size=sizes.suffix(s), repeat=r)
            for m in cfg["models"] for v in cfg["variants"] for mode in cfg["mode"] if v in variants(cfg, mode)
            for dtype in dtypes(cfg, mode) for s in size_labels(cfg, m) for b in batch_sizes(cfg, m)
            for r in range(cfg["repeats"])]


MAX_RUNS = 100_000   # runs in one sweep, at most (a config past it is refused before it is expanded)


def run_count(cfg: dict) -> int:
    """How many runs runs() gives, counted without making them (a size axis's values as
    configured, each combination one label)."""
    n = 0
    for m in cfg["models"]:
        combos = math.prod(len(v) for v in cfg.get("sizes", {}).get(m, {}).values())
        for mode in cfg["mode"]:
            n += (sum(v in variants(cfg, mode) for v in cfg["variants"]) * len(dtypes(cfg, mode)) * combos
                  * len(batch_sizes(cfg, m)) * cfg["repeats"])
    return n


def check_run_count(cfg: dict) -> None:
    """ConfigError where the config asks for more than MAX_RUNS runs."""
    n = run_count(cfg)
    if n > MAX_RUNS:
        raise ConfigError(f"config: {n} runs (models x modes x variants x dtypes x sizes x batch_sizes x repeats); "
                          f"at most {MAX_RUNS} in one sweep: sweep fewer values, or split it into several sweeps")


def variants(cfg: dict, mode: str) -> list[str]:
    """The variants a mode's runs take: variants_by_mode's for that mode, else variants'."""
    return (cfg.get("variants_by_mode") or {}).get(mode) or cfg["variants"]


def dtypes(cfg: dict, mode: str) -> list[str]:
    """The dtypes a mode's runs take: dtype_by_mode's for that mode, else dtype's."""
    return (cfg.get("dtype_by_mode") or {}).get(mode) or cfg["dtype"]


def batch_sizes(cfg: dict, model: str) -> list[int]:
    """The model's batch sizes: batch_sizes_by_model's, else the configured batch sizes, or
    the model's own default (batch_sizes: default)."""
    own = (cfg.get("batch_sizes_by_model") or {}).get(model)
    if own:
        return own
    return [catalog.default_batch(model)] if cfg["batch_sizes"] == "default" else cfg["batch_sizes"]


def unsupported_reason(run: dict, device: str) -> str | None:
    """Why this run cannot happen on the device, known before running it (the model has
    no such mode, the variant's supports() says no); None if it can. These runs are
    recorded as `unsupported` without being profiled."""
    if device not in ("cuda", "cpu"):
        return None
    if run["mode"] not in catalog.modes(run["model"]):
        return f"model {run['model']} has no {run['mode']} mode"
    return catalog.unsupported_reason(run["model"], run["variant"], device, run["mode"])


def run_dir(results: str, **keys) -> str:
    return os.path.join(results, "runs", RUN_PATTERN.format(**keys))


def existing_runs(cfg: dict, left_out: list | None = None) -> list[dict]:
    """The runs already recorded under the results folder, for regenerating tables and
    figures without profiling again: a run.json and its profile; or a run.json and its
    metrics.json where the profile was not copied ("metrics_only": True: results brought
    back without their report.sqlite / trace.json); or the unsupported.json of a run that
    was not profiled ("skipped": True). In the order runs() gives the configured runs (so
    the tables' rows come in the sweep's own order), then any others (all of them where cfg
    names no models) by their keys. A folder holding a run.json whose path is not a run of a
    model and variant this checkout knows (a folder renamed by hand, `<script>`) is left
    out and named in `left_out` where given (a list), never made a job."""
    root = os.path.join(cfg["results"], "runs")
    models, variants_known = set(catalog.model_names()), set(catalog.variant_names())
    pat = re.compile("^" + RUN_PATTERN.format(
        backend="(?P<backend>nsys|torch)", model="(?P<model>[^/]+)", variant="(?P<variant>[^/]+)",
        mode="(?P<mode>inference|train)", dtype=f"(?P<dtype>{'|'.join(axes.DTYPES)})", batch=r"(?P<batch>[1-9][0-9]*)",
        size=f"(?P<size>{sizes.SUFFIX_PATTERN})", repeat=r"(?P<repeat>[0-9]+)") + "$")
    found = []
    for dirpath, _, files in os.walk(root):
        m = pat.match(os.path.relpath(dirpath, root).replace(os.sep, "/"))
        if not m or m["model"] not in models or m["variant"] not in variants_known:
            if left_out is not None and ("run.json" in files or UNSUPPORTED_FILE in files):
                left_out.append(dirpath)
            continue
        prof = "report.sqlite" if m["backend"] == "nsys" else "trace.json"
        keys = {**m.groupdict(), "batch": int(m["batch"]), "repeat": int(m["repeat"])}
        if "run.json" in files and prof in files:
            found.append({**keys, "skipped": False, "metrics_only": False})
        elif "run.json" in files and "metrics.json" in files and "kernels.csv" in files:
            found.append({**keys, "skipped": False, "metrics_only": True})
        elif UNSUPPORTED_FILE in files:
            found.append({**keys, "skipped": True, "metrics_only": False})
    if not found:
        raise ConfigError(f"config key results: no profiled runs under {root} to regenerate from "
                          "(run the sweep first, or point results: at a copied results folder)")
    if any(r["metrics_only"] for r in found):
        lacking = [run_dir(cfg["results"], **r) for r in found
                   if not r["skipped"] and not r["metrics_only"]
                   and not os.path.exists(os.path.join(run_dir(cfg["results"], **r), "metrics.json"))]
        if lacking:
            raise ConfigError(f"config key results: some runs under {root} have their profiles but no "
                              f"metrics.json (e.g. {lacking[0]}) and others only their metrics.json: "
                              "regenerate needs one or the other for every run")
    keys = ("backend", "model", "variant", "mode", "dtype", "batch", "size", "repeat")
    order: dict[tuple, int] = {}
    for backend in sorted({r["backend"] for r in found}) if "models" in cfg else ():
        for r in runs(cfg, backend):
            order.setdefault(tuple(r[k] for k in keys), len(order))

    def rank(r: dict) -> tuple:
        k = tuple(r[k] for k in keys)
        return (0, order[k], ()) if k in order else (1, 0, tuple(str(v) for v in r.values()))
    return sorted(found, key=rank)


def metrics_only(found: list[dict]) -> bool:
    """Regenerating from runs whose profiles were not copied: every run's metrics.json is
    used as it is (the metrics step is left out; tables, figures and summary run)."""
    return any(r.get("metrics_only") for r in found)


UNSUPPORTED_FILE = "unsupported.json"


def write_unsupported(path: str, run: dict, device: str, reason: str, log: str | None = None) -> dict:
    """The record of a run that is not profiled because it cannot happen on the device
    (unsupported_reason): its keys, status unsupported and the reason. Written without
    starting a process or torch (a zoo has a hundred of them)."""
    from fusionlab.core.io import write_json_atomic
    rec = {"model": run["model"], "variant": run["variant"], "batch": int(run["batch"]),
           "size": sizes.from_suffix(run.get("size", "")), "mode": run["mode"], "dtype": run["dtype"], "device": device, "profiler": "none",
           "repeat": int(run["repeat"]), "status": "unsupported", "reason": reason}
    write_json_atomic(path, rec)
    if log:
        with open(log, "w") as f:
            print(f"unsupported: {reason}", file=f)
    return rec
