"""A sweep's config checked against its schema (config.schema.yaml, with the catalog's
model and variant names filled in) and config_checks, its defaults filled in; values given
on Snakemake's command line typed as they would be in a file. Every error is one line
naming the key, the bad value and the allowed values (ConfigError).
"""
from __future__ import annotations

import copy
import glob
import json
import os
import re
import sys

import yaml

from fusionlab.core import axes, sizes
from fusionlab.experiments import catalog
from fusionlab.plan import config_checks, runs


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
    if v == "maximum":
        return f"config key {key}: {err.instance!r} is too large; allowed values: at most {err.validator_value}"
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


def as_in_file(value):
    """A value given on Snakemake's command line as it would be in a config file: a string
    read as YAML (Snakemake reads `--config k={a: false}` with YAML's base loader, every
    scalar a string: 'false', '128'), a number as its string (`--config gpus=2`, which
    Snakemake makes an int); anything else as it is."""
    if isinstance(value, str):
        try:
            return yaml.safe_load(value)
        except yaml.YAMLError:
            return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def _branches(s: dict) -> list:
    return [s] + [b for b in s.get("anyOf", []) if isinstance(b, dict)]


def typed(value, given, s: dict, valid):
    """value (the config's, the command line's merged into a file's) with each leaf that
    `given` (the command line's) sets read as_in_file where the schema s refuses it as
    given and takes it so; valid(value, schema) -> bool."""
    if isinstance(given, dict) and isinstance(value, dict):
        out = dict(value)
        for k, g in given.items():
            sub = next((b["properties"][k] for b in _branches(s) if k in b.get("properties", {})),
                       next((b["additionalProperties"] for b in _branches(s)
                             if isinstance(b.get("additionalProperties"), dict)), {}))
            if k in value:
                out[k] = typed(value[k], g, sub, valid)
        return out
    if isinstance(given, list) and isinstance(value, list):
        item = next((b["items"] for b in _branches(s) if isinstance(b.get("items"), dict)), {})
        return [typed(v, v, item, valid) for v in value]
    if isinstance(given, (dict, list)) or valid(value, s):
        return value
    alt = as_in_file(value)
    return alt if valid(alt, s) else value


def validate(config: dict, root: str | None = None, regenerate: bool = False,
             command_line: dict | None = None) -> dict:
    """Return the config with the schema's defaults filled in, or raise ConfigError (one
    line). root: the checkout, which results must not overwrite. regenerate: nothing runs,
    so the models named by import path join the catalog from their config entries alone
    (catalog.from_config), never imported (their libraries need not be installed), with
    the size axes their recorded runs name (recorded_sizes; the config's own where none is
    recorded: unrecorded_sizes). command_line: the values
    given with --config (Snakemake's `workflow.config_settings.config`), typed as in a
    file where the schema refuses them as Snakemake parsed them (typed)."""
    if not isinstance(config, dict) or not config:
        raise ConfigError("config: empty; give models, variants and batch_sizes (see config.yaml)")
    if command_line:
        checker = config_checks.strict_validator(jsonschema, {})
        config = typed(config, command_line, schema(), lambda v, sub: checker.evolve(schema=sub).is_valid(v))
    config_checks.check_strings(config)
    imports = import_entries(config.get("import_models", {}))
    swept = config.get("models") if isinstance(config.get("models"), list) else list(imports)
    joining = {n: e for n, e in imports.items() if n in swept}
    if regenerate:   # their size axes from their recorded runs, for the sizes the config sweeps
        results = config.get("results") or schema_file()["properties"]["results"]["default"]
        swept_sizes = config.get("sizes") if isinstance(config.get("sizes"), dict) else {}
        joining = {n: {**e, "sizes": recorded_sizes(results, n) or unrecorded_sizes(swept_sizes[n])}
                   if n in swept_sizes else e for n, e in joining.items()}
    try:   # only the swept ones are imported and checked: the others need not be installed here
        catalog.extend(joining, check=not regenerate)
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
    runs.check_run_count(cfg)
    return cfg


def recorded_sizes(results: str, model: str) -> dict:
    """The size axes of a model as its runs recorded under results name them: axis ->
    {default, min, max}, from each run.json's `sizes` (every axis's value) and `size` (its
    label, naming the axes off their default), and each unsupported.json's `size`. An
    axis's default is its value in a run whose label does not name it, None where every
    run names it; its range is any value the schema allows (a configuration not recorded
    is a row not run). {} where no run of the model is recorded."""
    found: dict = {}
    run_folders = os.path.join(glob.escape(results), "runs", "*", glob.escape(model), "*", "*", "*", "*")
    for name in ("run.json", "unsupported.json"):
        for path in sorted(glob.glob(os.path.join(run_folders, name))):
            try:
                with open(path) as f:
                    rec = json.load(f)
                named = sizes.parse(str(rec.get("size") or sizes.DEFAULT))
            except (OSError, ValueError, AttributeError):
                continue
            values = {**named, **(rec.get("sizes") if isinstance(rec.get("sizes"), dict) else {})}
            for axis, value in values.items():
                axis_record = found.setdefault(axis, {"default": None, "min": 1, "max": sys.maxsize})
                if axis not in named and isinstance(value, int):
                    axis_record["default"] = value
    return found


def unrecorded_sizes(config_sizes) -> dict:
    """The size axes of a model with no recorded run, for a regenerate: each axis its
    config entry names, with no default and any value the schema allows (its
    configurations are rows not run)."""
    axes = config_sizes if isinstance(config_sizes, dict) else {}
    return {axis: {"default": None, "min": 1, "max": sys.maxsize} for axis in axes}


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
            if axis in sizes.TABLE_COLUMNS:
                raise ConfigError(f"config key sizes.{model}: size axis {axis!r} is also the name of a column of the "
                                  f"run or kernel tables, which it would shadow; name {model}'s argument otherwise")
            lo, hi = declared[axis]["min"], declared[axis]["max"]
            bad = [v for v in values if not lo <= v <= hi]
            if bad:
                raise ConfigError(f"config key sizes.{model}.{axis}: {bad[0]!r} is not allowed; "
                                  f"allowed values: integers {lo} to {hi}")
