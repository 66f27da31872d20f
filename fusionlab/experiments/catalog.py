"""The light metadata of the registry: model and variant names, each model's default batch,
size axes, modes and description, and every variant's support on every (model, device,
mode), computed from the registry (as TorchBench reads a model's metadata before it loads
the model). The Snakefile builds its DAG from it without importing torch or any model code.

It is computed, never edited: a child process imports the registry and prints the catalog,
and the result is cached under the cache folder (FUSIONLAB_CACHE_DIR, else
~/.cache/fusionlab) by a hash of the registry's source files, so a new model or variant file
is in the next catalog read. A config's `import_models` (models named by import path) join
through `extend`, cached by their import paths and their files' contents; the child process
imports and checks each one (registry.check_model), and a failure is one line naming it.

    python -m fusionlab.experiments.catalog          # print the catalog (JSON)
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICES = ("cuda", "cpu")
MODES = ("inference", "train")
SOURCES = ("models", "variants", "kernels")   # folders under experiments/ whose code defines the registry


class CatalogError(ValueError):
    """The catalog cannot be computed (a model file that fails to import, an imported model
    that fails its check); the message is one line."""


def cache_dir() -> str:
    """Where computed catalogs are kept: FUSIONLAB_CACHE_DIR, else ~/.cache/fusionlab."""
    return os.environ.get("FUSIONLAB_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "fusionlab")


def source_key() -> str:
    """A hash of the files that define the registry (registry.py, this file, models/,
    variants/, kernels/): the built-in catalog's cache key."""
    h = hashlib.sha256()
    files = [os.path.join(HERE, "registry.py"), os.path.abspath(__file__)]
    for folder in SOURCES:
        d = os.path.join(HERE, folder)
        files += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith((".py", ".cu")))
    for path in files:
        h.update(os.path.relpath(path, HERE).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read() + b"\0")
    return h.hexdigest()[:20]


def _import_key(entries: dict) -> str:
    """A hash of the import entries and of the files they name (where they can be found
    without importing anything)."""
    import importlib.util
    h = hashlib.sha256(json.dumps(entries, sort_keys=True).encode())
    for entry in entries.values():
        where = entry["factory"].rpartition(":")[0]
        path = os.path.abspath(where) if where.endswith(".py") else None
        if path is None:
            try:
                spec = importlib.util.find_spec(where)
                path = spec.origin if spec else None
            except (ImportError, ValueError):
                path = None
        if path and os.path.isfile(path):
            with open(path, "rb") as f:
                h.update(f.read())
        else:
            h.update(os.urandom(8))   # not found without importing: not cached
    return h.hexdigest()[:20]


def _entry_metadata(m) -> dict:
    return {"default_batch": m.default_batch, "modes": list(m.modes), "seed": m.seed,
            "description": m.description, "origin": m.origin,
            "sizes": {a.name: {"type": "int", "default": a.default, "min": a.min, "max": a.max,
                               "description": a.description} for a in m.sizes}}


def from_registry(imports: dict | None = None) -> dict:
    """The catalog as the registry defines it (imports every model and variant, so torch).
    With `imports` (name -> {factory, default_batch?, modes?, description?}): those models
    alone, each imported and checked."""
    from fusionlab.experiments import registry
    if imports:
        specs = []
        for name, entry in sorted(imports.items()):
            try:
                spec = registry.import_model(name, entry["factory"], default_batch=entry.get("default_batch"),
                                             modes=entry.get("modes"), description=entry.get("description"))
                registry.check_model(spec)
            except registry.ImportError_ as e:
                raise CatalogError(f"config key import_models.{name}: {e}") from None
            specs.append(spec)
    else:
        specs = [m for m in registry.MODELS.values() if not m.origin]
    models = {m.name: _entry_metadata(m) for m in sorted(specs, key=lambda m: m.name)}
    variants = {}
    for v in sorted(registry.VARIANTS.values(), key=lambda v: v.name):
        unsupported = {f"{model}/{device}/{mode}": why for model in models for device in DEVICES
                       for mode in MODES if (why := v.supports(model, device, mode))}
        variants[v.name] = {"description": v.description, "unsupported": unsupported}
    return {"models": models, "variants": variants}


def _computed(key: str, argv: list) -> dict:
    """The catalog a child process prints for `argv`, cached under cache_dir() by `key`."""
    path = os.path.join(cache_dir(), f"catalog-{key}.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        pass
    root = os.path.dirname(os.path.dirname(HERE))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    p = subprocess.run([sys.executable, "-m", "fusionlab.experiments.catalog", *argv],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr or p.stdout).strip().splitlines() if ln.strip()]
        raise CatalogError(lines[-1] if lines else f"computing the catalog failed (exit {p.returncode})")
    catalog = json.loads(p.stdout)
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=cache_dir(), delete=False, suffix=".tmp") as f:
            f.write(p.stdout)
        os.replace(f.name, path)
    except OSError:
        pass   # an unwritable cache: computed again next time
    return catalog


@functools.lru_cache(maxsize=1)
def load() -> dict:
    """The catalog (no torch in this process): the built-in models and variants, and the
    models `extend` has added."""
    return _computed(source_key(), [])


def from_config(imports: dict) -> dict:
    """The catalog entries of models named by import path from their config entries alone
    (name -> {factory, default_batch?, modes?, description?, sizes?}), nothing imported:
    default batch 1 and both modes where not given, the size axes `sizes` gives (those its
    recorded runs name) or none, every variant supported (what
    regenerating recorded runs needs, where nothing runs); `unchecked` marks them, so a
    later extend with check=True imports and checks them."""
    return {name: {"default_batch": int(e.get("default_batch") or 1), "modes": list(e.get("modes") or MODES),
                   "seed": "", "description": e.get("description", ""), "origin": e["factory"],
                   "sizes": dict(e.get("sizes") or {}),
                   "unchecked": True}
            for name, e in sorted(imports.items())}


def extend(imports: dict, check: bool = True) -> None:
    """Add models named by import path (name -> {factory, ...}) to load()'s catalog, and
    their support rows to its variants. check=False: entries from the config alone
    (from_config; no import, no check), for regenerating recorded runs. CatalogError (one
    line) where one cannot join."""
    if not imports:
        return
    cat = load()
    models = cat["models"]
    new = {n: e for n, e in imports.items() if models.get(n, {}).get("origin") != e["factory"]
           or (check and models[n].get("unchecked"))}
    taken = sorted(n for n in new if n in models and not models[n].get("unchecked"))
    if taken:
        raise CatalogError(f"config key import_models.{taken[0]}: the name of a built-in model; choose another")
    if not new:
        return
    if not check:
        cat["models"].update(from_config(new))
        return
    argv = [a for name, entry in sorted(new.items()) for a in ("--import", name, json.dumps(entry, sort_keys=True))]
    extra = _computed(f"{source_key()}-{_import_key(new)}", argv)
    cat["models"].update(extra["models"])
    for name, v in extra["variants"].items():
        cat["variants"][name]["unsupported"].update(v["unsupported"])


def imported(model: str) -> str:
    """The import path of a model named by one ('' for a built-in model)."""
    return load()["models"][model].get("origin", "")


def model_names() -> tuple:
    return tuple(sorted(load()["models"]))


def variant_names() -> tuple:
    return tuple(sorted(load()["variants"]))


def default_batch(model: str) -> int:
    return load()["models"][model]["default_batch"]


def sizes(model: str) -> dict:
    """The model's size axes: name -> {type, default, min, max, description}."""
    return load()["models"][model].get("sizes", {})


def size_axes() -> tuple:
    """Every size axis name any model declares."""
    return tuple(sorted({a for m in load()["models"].values() for a in m.get("sizes", {})}))


def modes(model: str) -> list:
    return load()["models"][model]["modes"]


def unsupported_reason(model: str, variant: str, device: str, mode: str) -> str | None:
    """Why the variant cannot run this model there (the variant's supports()), or None."""
    return load()["variants"][variant]["unsupported"].get(f"{model}/{device}/{mode}")


def main(argv=None) -> int:
    """Print the catalog as JSON; with `--import NAME ENTRY_JSON` pairs, those models' alone."""
    argv = sys.argv[1:] if argv is None else argv
    imports = {}
    while argv[:1] == ["--import"] and len(argv) >= 3:
        imports[argv[1]] = json.loads(argv[2])
        argv = argv[3:]
    if argv:
        print(f"usage: python -m fusionlab.experiments.catalog [--import NAME ENTRY_JSON ...]; got {argv}",
              file=sys.stderr)
        return 2
    try:
        print(json.dumps(from_registry(imports), indent=1, sort_keys=True))
    except CatalogError as e:
        print(e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
