"""The sweep: validate config.yaml, resolve device and profiler, expand the runs.

Used by the Snakefile and the tests; runs without Snakemake. Every config error is
one line naming the key, the bad value and the allowed values.
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import yaml

from fusionlab.core import axes, sizes
from fusionlab.core.io import read_json
from fusionlab.experiments import catalog
from fusionlab.plan import config_checks


def _import_jsonschema():
    """jsonschema, imported without rfc3987_syntax: jsonschema registers its optional
    format checkers at import, and that one (installed with jsonschema's format extras)
    builds a grammar there, 1.2 s of every Snakemake command. The config schema uses no
    format. Where something imported either already, it is left as it is."""
    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        import jsonschema
        return jsonschema
    sys.modules["rfc3987_syntax"] = None    # its import raises ImportError: checker skipped
    try:
        import jsonschema
    finally:
        del sys.modules["rfc3987_syntax"]
    return jsonschema


jsonschema = _import_jsonschema()

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.schema.yaml")


ConfigError = config_checks.ConfigError


def schema() -> dict:
    s = schema_file()
    s["properties"]["models"]["items"]["enum"] = list(catalog.model_names())
    s["properties"]["variants"]["items"]["enum"] = list(catalog.variant_names())
    s["properties"]["sizes"]["propertyNames"]["enum"] = list(catalog.model_names())
    s["properties"]["timeout_s_by_variant"]["propertyNames"]["enum"] = list(catalog.variant_names())
    dtype = s["properties"]["dtype"]["anyOf"]
    dtype[0]["enum"] = dtype[1]["items"]["enum"] = list(axes.DTYPES)
    for m in s["properties"]["dtype_by_mode"]["properties"].values():
        m["items"]["enum"] = list(axes.DTYPES)
    for m in s["properties"]["variants_by_mode"]["properties"].values():
        m["items"]["enum"] = list(catalog.variant_names())
    s["properties"]["batch_sizes_by_model"]["propertyNames"] = {"enum": list(catalog.model_names())}
    return s


def _key(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _message(err: jsonschema.ValidationError) -> str:
    key = _key(err.absolute_path)
    v = err.validator
    if v == "enum":
        return (f"config key {key}: {err.instance!r} is not allowed; allowed values: "
                + ", ".join(map(str, err.validator_value)))
    if v == "anyOf":  # one value or a list (mode, dtype, batch_sizes)
        branches = err.validator_value
        if isinstance(err.instance, list):  # say what is wrong inside the list
            subs = [e for e in err.context if branches[e.schema_path[0]].get("type") == "array"]
            if subs:
                return _message(max(subs, key=lambda e: len(e.absolute_path)))
        enums = [str(x) for b in branches for x in b.get("enum", [])]
        arrays = [b for b in branches if b.get("type") == "array"]
        items = arrays[0].get("items", {}) if arrays else {}
        of = (", ".join(map(str, items["enum"])) if "enum" in items else
              f"{items.get('type', 'value')}s >= {items['minimum']}" if "minimum" in items else "values")
        return (f"config key {key}: {err.instance!r} is not allowed; allowed values: "
                + ", ".join(enums) + (f", or an array (list) of {of}" if arrays else ""))
    if v == "additionalProperties":
        allowed = ", ".join(sorted(err.schema.get("properties", {})))
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        return f"config key {key}: unknown key(s) {', '.join(map(repr, extra))}; allowed keys: {allowed}"
    if v == "minimum":
        return f"config key {key}: {err.instance!r} is too small; allowed values: integers >= {err.validator_value}"
    if v == "minItems":
        return f"config key {key}: empty list; give at least {err.validator_value} value(s)"
    if v == "type":
        want = err.validator_value
        if want in ("integer", "number") and isinstance(err.instance, float):
            return (f"config key {key}: {err.instance!r} is not allowed; allowed values: "
                    + ("integers (no decimal point)" if want == "integer" else "finite numbers"))
        return f"config key {key}: {err.instance!r} is not of type {want}"
    if v == "required":
        return f"config: {err.message}"
    if v == "uniqueItems":
        return f"config key {key}: {err.instance!r} has repeated values"
    if v == "pattern":
        return f"config key {key}: {err.instance!r} has characters outside {err.validator_value}"
    return f"config key {key}: {err.message}"


def _defaults(s: dict, cfg: dict) -> None:
    for k, sub in s.get("properties", {}).items():
        if k not in cfg and "default" in sub:
            cfg[k] = copy.deepcopy(sub["default"])
        if isinstance(cfg.get(k), dict) and sub.get("type") == "object":
            _defaults(sub, cfg[k])


def import_entries(entries) -> dict:
    """The config's import_models as name -> {factory, ...}, with a factory file's path
    made absolute (jobs may run elsewhere). ConfigError (one line) on a malformed entry."""
    if not isinstance(entries, dict):
        raise ConfigError(f"config key import_models: {entries!r} is not a mapping of name -> import path")
    s = schema_file()["properties"]["import_models"]
    for name, entry in entries.items():
        key = f"config key import_models.{name}"
        if not isinstance(name, str) or not re.match(s["propertyNames"]["pattern"], name):
            raise ConfigError(f"{key}: a model name is lowercase letters, digits and _, starting with a letter")
        if isinstance(entry, dict):
            extra = sorted(set(entry) - set(s["additionalProperties"]["anyOf"][1]["properties"]))
            if extra or "factory" not in entry:
                raise ConfigError(f"{key}: " + (f"unknown key(s) {', '.join(map(repr, extra))}; " if extra else
                                                "no factory; ") + "allowed keys: factory, default_batch, modes, description")
            errors = list(jsonschema.Draft202012Validator(s["additionalProperties"]["anyOf"][1]).iter_errors(entry))
            if errors:
                raise ConfigError(_message(errors[0]).replace("config key ", f"{key}.", 1))
            factory = entry["factory"]
        else:
            factory = entry
        if not isinstance(factory, str) or not re.match(s["additionalProperties"]["anyOf"][0]["pattern"], factory):
            raise ConfigError(f"{key}: {factory!r} is not an import path; give package.module:factory "
                              "or path/to/file.py:factory")
    out = {}
    for name, entry in entries.items():
        entry = dict(entry) if isinstance(entry, dict) else {"factory": entry}
        where, _, attr = entry["factory"].rpartition(":")
        if where.endswith(".py"):
            entry["factory"] = f"{os.path.abspath(where)}:{attr}"
        out[name] = entry
    return out


def schema_file() -> dict:
    with open(SCHEMA) as f:
        return yaml.safe_load(f)


def validate(config: dict, root: str | None = None, regenerate: bool = False) -> dict:
    """Return the config with the schema's defaults filled in, or raise ConfigError (one
    line). root: the checkout, which results must not overwrite. regenerate: nothing runs,
    so the models named by import path join the catalog from their config entries alone
    (catalog.from_config), never imported (their libraries need not be installed)."""
    if not isinstance(config, dict) or not config:
        raise ConfigError("config: empty; give models, variants and batch_sizes (see config.yaml)")
    config_checks.check_strings(config)
    imports = import_entries(config.get("import_models", {}))
    swept = config.get("models") if isinstance(config.get("models"), list) else list(imports)
    try:   # only the swept ones are imported and checked: the others need not be installed here
        catalog.extend({n: e for n, e in imports.items() if n in swept}, check=not regenerate)
        catalog.extend({n: e for n, e in imports.items() if n not in swept}, check=False)
    except catalog.CatalogError as e:
        raise ConfigError(str(e)) from None
    s = schema()
    errors = sorted(config_checks.strict_validator(jsonschema, s).iter_errors(config),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        raise ConfigError(_message(errors[0]))
    cfg = copy.deepcopy(config)
    _defaults(s, cfg)
    cfg["import_models"] = imports
    config_checks.check_nsys_args(cfg["nsys"]["args"])
    config_checks.check_results(cfg["results"], root)
    for key in ("mode", "dtype"):  # one value or a list: always a list from here on
        if isinstance(cfg[key], str):
            cfg[key] = [cfg[key]]
    if "eager" not in cfg["variants"]:
        cfg["variants"] = ["eager"] + cfg["variants"]
    config_checks.check_by_keys(cfg)
    _check_sizes(cfg)
    return cfg


def _check_sizes(cfg: dict) -> None:
    """The sizes key against the models' declared axes (catalog): each axis declared by
    its model, each value in the axis's range (entries of models not swept dropped before:
    config_checks.check_by_keys)."""
    for model, axes_values in cfg["sizes"].items():
        declared = catalog.sizes(model)
        for axis, values in axes_values.items():
            if axis not in declared:
                raise ConfigError(f"config key sizes.{model}: {axis!r} is not a size axis of {model}; "
                                  f"allowed values: {', '.join(declared) or 'none (only batch_sizes)'}")
            lo, hi = declared[axis]["min"], declared[axis]["max"]
            bad = [v for v in values if not lo <= v <= hi]
            if bad:
                raise ConfigError(f"config key sizes.{model}.{axis}: {bad[0]!r} is not allowed; "
                                  f"allowed values: integers {lo} to {hi}")


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


# --- the machine ----------------------------------------------------------------------

def gpu_visible() -> bool:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    if shutil.which("nvidia-smi"):
        try:
            return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False
    return os.path.exists("/dev/nvidia0")


def gpu_indices(spec: str = "auto") -> list[str]:
    """The GPUs a sweep may use, as CUDA_VISIBLE_DEVICES names them: the configured list,
    or (auto) the visible ones: CUDA_VISIBLE_DEVICES when set, else every GPU nvidia-smi
    lists. Raise ConfigError for a configured GPU that is not visible."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible not in (None, ""):
        found = [g.strip() for g in visible.split(",") if g.strip()]
    else:
        found = []
        if shutil.which("nvidia-smi"):
            try:
                out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
                found = [str(i) for i, line in enumerate(l for l in out.splitlines() if l.startswith("GPU "))]
            except (OSError, subprocess.SubprocessError):
                pass
        found = found or ["0"]
    if spec == "auto":
        return found
    want = [g for g in spec.split(",")]
    missing = [g for g in want if g not in found]
    if missing:
        raise ConfigError(f"config key gpus: {spec!r} names GPU(s) {', '.join(missing)} that are not visible; "
                          f"allowed values: auto, or a list of {', '.join(found)}")
    return want


def nsys_version() -> str | None:
    """The version of the nsys on PATH ('2025.3.1.90'), or None if there is none."""
    if not shutil.which("nsys"):
        return None
    try:
        out = subprocess.run(["nsys", "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d{4}\.\d+(?:\.\d+)*)", out)
    return m.group(1) if m else None


def _vtuple(v: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", v))


@dataclass(frozen=True)
class Machine:
    device: str        # cuda | cpu
    profiler: str      # nsys | torch
    nsys: str | None   # version found
    note: str          # one line for the log: what was picked and why


MACHINE_ENV = "FUSIONLAB_MACHINE"


def machine_to_env(machine: Machine) -> str:
    """The machine as the main Snakemake process found it, for its jobs' own processes
    (machine_from_env): JSON."""
    return json.dumps(dataclasses.asdict(machine))


def machine_from_env(text: str) -> Machine:
    """The inverse of machine_to_env: a job's process (Snakemake parses the workflow again
    in each one) takes the main process's machine instead of running nvidia-smi and nsys
    again, a second or two of CPU per job beside the measurements."""
    return Machine(**json.loads(text))


def resolve(cfg: dict, gpu: bool | None = None, nsys: str | None | bool = False) -> Machine:
    """Pick device and profiler for this machine. Raise ConfigError if the config asks
    for what the machine lacks (nsys missing or too old, cuda without a GPU)."""
    gpu = gpu_visible() if gpu is None else gpu
    nsys = nsys_version() if nsys is False else nsys
    device = cfg["device"] if cfg["device"] != "auto" else ("cuda" if gpu else "cpu")
    if device == "cuda" and not gpu:
        raise ConfigError("config key device: 'cuda' but no GPU is visible on this machine "
                          "(nvidia-smi -L failed); allowed values: auto, cuda, cpu")
    want = cfg["profiler"]
    minv = cfg["nsys"]["min_version"]
    nsys_ok = nsys is not None and _vtuple(nsys) >= _vtuple(minv)
    if want == "nsys" and not nsys_ok:
        found = f"found nsys {nsys}" if nsys else "no nsys on PATH"
        raise ConfigError(f"config key profiler: 'nsys' needs Nsight Systems >= {minv}, {found}; "
                          "install it (README: Nsight Systems) or set profiler: torch")
    if want == "auto":
        profiler = "nsys" if (nsys_ok and device == "cuda") else "torch"
        why = ("nsys and a GPU found" if profiler == "nsys" else
               f"{'no GPU' if device == 'cpu' else 'no usable nsys'}: torch.profiler fallback, CPU numbers only"
               if device == "cpu" or not nsys_ok else "")
    else:
        profiler, why = want, "as configured"
    return Machine(device, profiler, nsys, f"fusionlab: device={device} profiler={profiler} "
                   f"(nsys {nsys or 'not found'}; {why})")


# --- the runs -----------------------------------------------------------------------

RUN_PATTERN = ("{backend}/{model}/{variant}/{mode}_{dtype}/bs{batch}{size}/r{repeat}")


def runs(cfg: dict, backend: str) -> list[dict]:
    """One dict per run; `size` is the run folder's size suffix (core.sizes: "" for the
    model's default sizes)."""
    return [dict(backend=backend, model=m, variant=v, mode=mode, dtype=dtype, batch=b,
                 size=sizes.suffix(s), repeat=r)
            for m in cfg["models"] for v in cfg["variants"] for mode in cfg["mode"] if v in variants(cfg, mode)
            for dtype in dtypes(cfg, mode) for s in size_labels(cfg, m) for b in batch_sizes(cfg, m)
            for r in range(cfg["repeats"])]


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


def existing_runs(cfg: dict) -> list[dict]:
    """The runs already recorded under the results folder, for regenerating tables and
    figures without profiling again: a run.json and its profile; or a run.json and its
    metrics.json where the profile was not copied ("metrics_only": True: results brought
    back without their report.sqlite / trace.json); or the unsupported.json of a run that
    was not profiled ("skipped": True). In the order runs() gives the configured runs (so
    the tables' rows come in the sweep's own order), then any others (all of them where cfg
    names no models) by their keys."""
    root = os.path.join(cfg["results"], "runs")
    pat = re.compile("^" + RUN_PATTERN.format(
        backend="(?P<backend>nsys|torch)", model="(?P<model>[^/]+)", variant="(?P<variant>[^/]+)",
        mode="(?P<mode>inference|train)", dtype=r"(?P<dtype>\w+)", batch=r"(?P<batch>\d+)",
        size=f"(?P<size>{sizes.SUFFIX_PATTERN})", repeat=r"(?P<repeat>\d+)") + "$")
    found = []
    for dirpath, _, files in os.walk(root):
        m = pat.match(os.path.relpath(dirpath, root).replace(os.sep, "/"))
        if not m:
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


def recorded_machine(cfg: dict, found: list[dict]) -> Machine:
    backends = sorted({r["backend"] for r in found})
    if len(backends) > 1:
        raise ConfigError(f"config key results: {cfg['results']} mixes backends {backends}; "
                          "regenerate one at a time (separate results folders)")
    note = (f"fusionlab: regenerating from {len(found)} recorded {backends[0]} runs in "
            f"{cfg['results']} (no profiling)")
    if metrics_only(found):
        n = sum(r["metrics_only"] for r in found)
        note += (f"; {n} without their profile (not copied): every run's metrics.json is used "
                 "as it is, only tables, figures and summary are made again")
    return Machine("recorded", backends[0], None, note)


def recorded_device(run_dirs: list[str]) -> str | None:
    """The device the recorded runs ran on: the first run.json that names one."""
    for d in run_dirs:
        try:
            device = (read_json(os.path.join(d, "run.json")) or {}).get("device")
        except (OSError, ValueError):
            continue
        if device:
            return device
    return None


CUDA_NCU = os.path.join(os.sep, "usr", "local", "cuda", "bin", "ncu")   # the CUDA toolkit's default place


def ncu_path() -> str | None:
    """Nsight Compute's command line: on PATH, else in the CUDA toolkit's default place, else None."""
    return shutil.which("ncu") or (CUDA_NCU if os.path.exists(CUDA_NCU) else None)
