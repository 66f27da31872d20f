"""The config's checks beyond its JSON schema: integers are integers and numbers finite
(a schema validator takes 8.0 for an integer and .nan for a number), strings hold no
control character (a pattern anchored with $ takes a trailing newline, and a newline
splits a job's shell command), nsys options from an allow-list, and a results folder
that cannot overwrite the checkout or the system. A config file is read as YAML with no key
given twice (load_file: YAML keeps the last of two silently). Each error is one line
naming the key, the value and what is allowed (ConfigError)."""
from __future__ import annotations

import math
import os
import re
import shlex


class ConfigError(ValueError):
    pass


def load_file(path: str) -> dict:
    """The config file at path as a mapping ({} where it is empty); ConfigError naming the
    file where it cannot be read, is not YAML, is not a mapping or gives a key twice."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                line = key_node.start_mark.line + 1
                raise ConfigError(f"config file {path}: key {key!r} is given twice (line {line}); YAML would keep "
                                  f"the last silently")
            seen.add(key)
        return loader.construct_mapping(node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        with open(path, encoding="utf-8") as f:
            cfg = yaml.load(f, Loader=Loader)  # noqa: S506 (a SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"config file {path}: cannot be read ({type(e).__name__}: "
                          f"{' '.join(str(e).split())[:200]})") from None
    if cfg is None:
        return {}
    if not isinstance(cfg, dict):
        raise ConfigError(f"config file {path}: a {type(cfg).__name__}, not a mapping of config keys")
    return cfg


def is_integer(_checker, value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(_checker, value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def strict_validator(jsonschema, schema: dict):
    """A Draft 2020-12 validator of schema whose `integer` is an int (not 8.0) and whose
    `number` is finite (not NaN or infinity)."""
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine_many({"integer": is_integer, "number": is_number})
    return jsonschema.validators.extend(base, type_checker=checker)(schema)


def _walk(value, key=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{key}[{i}]")
    else:
        yield key, value


def check_strings(config: dict) -> None:
    """No control character (newline, tab, NUL, ...) in any string of the config."""
    for key, value in _walk(config):
        if isinstance(value, str) and any(not c.isprintable() for c in value):
            raise ConfigError(f"config key {key}: {value!r} holds a control character (a newline?); "
                              f"allowed values: one line of printable characters")


# `nsys profile` options a sweep may add: what is traced and sampled, never where the
# report goes, the environment or the process launched (-o, -e, --force-overwrite, ...)
NSYS_OPTIONS = {
    "-s": r"none|cpu|process-tree|system-wide", "--sample": r"none|cpu|process-tree|system-wide",
    "--cpuctxsw": r"none|process-tree|system-wide",
    "--cuda-graph-trace": r"graph|node",
    "--cuda-memory-usage": r"true|false",
    "--cuda-um-cpu-page-faults": r"true|false", "--cuda-um-gpu-page-faults": r"true|false",
    "--cudabacktrace": r"[a-z0-9:,-]+",
    "-b": r"none|auto|fp|lbr|dwarf", "--backtrace": r"none|auto|fp|lbr|dwarf",
    "--osrt-threshold": r"[0-9]+", "--sampling-frequency": r"[0-9]+",
    "--python-sampling": r"true|false", "--python-sampling-frequency": r"[0-9]+",
    "--python-backtrace": r"none|cuda|false",
    "--gpu-metrics-devices": r"none|all|cuda-visible|[0-9,]+", "--gpu-metrics-device": r"none|all|[0-9,]+",
    "--gpu-metrics-frequency": r"[0-9]+", "--gpu-metrics-set": r"[A-Za-z0-9_-]+",
    "--trace-fork-before-exec": r"true|false",
    "--cuda-flush-interval": r"[0-9]+",
    "--export": r"none",
    "--stats": r"true|false",
}


def check_nsys_args(args: str) -> None:
    """config key nsys.args: each option from NSYS_OPTIONS with an allowed value
    (`--opt=value` or `--opt value`)."""
    try:
        words = shlex.split(args)
    except ValueError as e:
        raise ConfigError(f"config key nsys.args: {args!r} cannot be split into options ({e})") from None
    allowed = ", ".join(sorted(NSYS_OPTIONS))
    i = 0
    while i < len(words):
        opt, eq, value = words[i].partition("=")
        if opt not in NSYS_OPTIONS:
            raise ConfigError(f"config key nsys.args: option {opt!r} is not allowed (it could redirect the "
                              f"report, the environment or the command); allowed options: {allowed}")
        if not eq:
            if i + 1 >= len(words):
                raise ConfigError(f"config key nsys.args: option {opt} has no value")
            i += 1
            value = words[i]
        if not re.fullmatch(NSYS_OPTIONS[opt], value):
            raise ConfigError(f"config key nsys.args: {opt} {value!r} is not allowed; allowed values: "
                              f"{NSYS_OPTIONS[opt].replace('|', ', ')}")
        i += 1


SYSTEM_FOLDERS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr")
SOURCE_FOLDERS = ("fusionlab", "workflow", "tests", "config", "docs", "benchmarks", "profiles", ".git")


def check_results(results: str, root: str | None) -> None:
    """config key results: a folder, not /, not in a system folder (SYSTEM_FOLDERS), not the
    checkout (root) or a folder above it, not inside the checkout's source folders."""
    path = os.path.realpath(os.path.abspath(results))
    why = None
    if path == os.path.realpath("/"):
        why = "the file system's root"
    elif any(path == d or path.startswith(d + os.sep) for d in SYSTEM_FOLDERS):
        why = "a system folder"
    elif os.path.exists(path) and not os.path.isdir(path):
        why = "a file, not a folder"
    elif root:
        top = os.path.realpath(root)
        if top == path or top.startswith(path.rstrip(os.sep) + os.sep):
            why = "the checkout or a folder above it"
        elif any(path == os.path.join(top, s) or path.startswith(os.path.join(top, s) + os.sep)
                 for s in SOURCE_FOLDERS):
            why = "inside the checkout's source tree"
    if why:
        raise ConfigError(f"config key results: {results!r} is {why}; allowed values: a folder of its own "
                          f"for the sweep's outputs (default: results)")


YTE_KEY = "__use_yte__"


def check_files(config_files, allow_yte: bool) -> None:
    """Each config file read as load_file reads it (no key given twice), and none using YTE
    unless allowed (check_yte)."""
    for path in config_files:
        load_file(path)
    check_yte(config_files, allow_yte)


def check_yte(config_files, allowed: bool) -> None:
    """A config file using YTE templating (`__use_yte__: true`: Python run while the file
    is read) is refused unless allowed (--config allow_yte=true)."""
    for path in config_files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        if re.search(rf"(?m)^\s*['\"]?{YTE_KEY}['\"]?\s*:\s*(true|True|yes)\b", text) and not allowed:
            raise ConfigError(f"config file {path}: {YTE_KEY}: true runs Python while Snakemake reads the "
                              f"file (YTE templating); a config is code then. Run it only if you trust it, "
                              f"with --config allow_yte=true")


def check_by_keys(cfg: dict) -> None:
    """variants_by_mode's variants among variants (eager added to each mode);
    batch_sizes_by_model's and sizes' entries of models not swept dropped (a narrowed
    `models` keeps the config's other entries)."""
    for mode, names in cfg["variants_by_mode"].items():
        bad = [v for v in names if v not in cfg["variants"]]
        if bad:
            raise ConfigError(f"config key variants_by_mode.{mode}: {bad[0]!r} is not in variants; "
                              f"allowed values: {', '.join(cfg['variants'])}")
        if "eager" not in names:
            cfg["variants_by_mode"][mode] = ["eager"] + names
    for key in ("batch_sizes_by_model", "sizes"):
        cfg[key] = {m: v for m, v in cfg[key].items() if m in cfg["models"]}
