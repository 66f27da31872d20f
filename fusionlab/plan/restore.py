"""Packed records unpacked into a results folder, ready for a sweep to go on from them.

A pack is a tar archive of a sweep's run folders without their profiles (`.nsys-rep`,
`.sqlite`): `benchmarks/gpu/real_models.sh` writes them (its files under the sweep's
results folder, e.g. `results/real-models/runs/...`), and the recorded parts under
`benchmarks/results/` keep theirs as `records.tar.xz` (`runs/...`).

    fusionlab restore RESULTS ARCHIVE [ARCHIVE ...]

`restore` checks that every archive exists, then unpacks each into a folder of its own
(under RESULTS, whatever folder above `runs/` its paths carry). A member that is not a
plain file or folder, or that would land outside, is refused (the tar module's `data`
filter; a leading `/` is stripped), and then nothing is restored. In each archive:

- a run folder with neither `run.json` nor `unsupported.json` is left out: a run still
  going, or killed, when it was packed. Its `timing.json` may be a killed process's
  "process died" record, which the sweep would take as the run's result;
- an Nsight Compute record that a killed job left (`ncu_run.json` without `ncu.json`, its
  reason "process died") is left out with its `ncu.log`, so the sweep measures it again.

Then the archives' `runs/` and `device/` are copied into RESULTS in the order given (a later
archive's files replace an earlier one's; what a pack holds besides, tables, figures and
summary, is made again by the sweep or `regenerate`), the same two checks run over RESULTS,
and every file and folder under it gets one time, now. tar keeps each file's time, and
Snakemake runs a step again (and every step after it) where an input is newer than its
output by any amount, even a nanosecond.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time

RUN_GLOB = os.path.join("runs", "*", "*", "*", "*", "*", "r*")   # plan.sweep.RUN_PATTERN's depth
KEPT = ("runs", "device")   # what is restored of a pack
KILLED = "process died"     # the reason of the record a runner writes first (runner.record)


class RestoreError(RuntimeError):
    """An archive that cannot be restored (missing, not a tar archive, no runs/ in it)."""


def _runs_root(folder: str) -> str:
    """The folder under `folder` that holds `runs/` (itself, or one below it)."""
    for here, dirs, _ in os.walk(folder):
        if "runs" in dirs:
            return here
        dirs.sort()
    raise RestoreError("no runs/ folder in it")


def _extract(tar: tarfile.TarFile, folder: str) -> None:
    """Extract plain files and folders only, each inside folder (the tar module's `data`
    filter, or on a Python without it, before 3.10.12 and 3.11.4, the same checks by hand)."""
    top = os.path.realpath(folder)
    for m in tar.getmembers():
        where = os.path.realpath(os.path.join(folder, m.name.lstrip("/")))
        if not (m.isfile() or m.isdir()) or os.path.commonpath([top, where]) != top:
            raise tarfile.TarError(f"{m.name!r} is not a plain file or folder inside the results folder")
    if hasattr(tarfile, "data_filter"):
        tar.extractall(folder, filter="data")
        return
    for m in tar.getmembers():
        m.name = m.name.lstrip("/")
    tar.extractall(folder)


def unpack(archive: str, folder: str) -> tuple[str, int]:
    """Unpack one archive into folder; returns (the folder holding its runs/, how many run
    folders it held)."""
    try:
        with tarfile.open(archive) as tar:
            _extract(tar, folder)
    except (tarfile.TarError, EOFError, OSError) as e:
        raise RestoreError(f"{archive}: cannot be unpacked ({type(e).__name__}: {e})") from e
    try:
        root = _runs_root(folder)
    except RestoreError as e:
        raise RestoreError(f"{archive}: {e}") from None
    return root, len(glob.glob(os.path.join(root, RUN_GLOB)))


def _killed_ncu(d: str) -> bool:
    """An Nsight Compute record a killed job left: ncu_run.json, no ncu.json, and the
    record unreadable or its reason the runner's first record's."""
    if not os.path.exists(os.path.join(d, "ncu_run.json")) or os.path.exists(os.path.join(d, "ncu.json")):
        return False
    try:
        with open(os.path.join(d, "ncu_run.json")) as f:
            reason = str(json.load(f).get("reason", ""))
    except (OSError, ValueError, AttributeError):
        return True
    return KILLED in reason


def _finished(d: str) -> bool:
    """A run folder whose run ended: its record (run.json), or the record that the device
    cannot run it (unsupported.json)."""
    return any(os.path.exists(os.path.join(d, n)) for n in ("run.json", "unsupported.json"))


def drop_unfinished(folder: str) -> tuple[list[str], list[str]]:
    """Remove the run folders without run.json or unsupported.json and the Nsight Compute
    records a killed job left (module doc) under folder; returns (runs removed, ncu records
    removed), as run folders relative to folder."""
    runs, ncu = [], []
    for d in sorted(glob.glob(os.path.join(folder, RUN_GLOB))):
        if not _finished(d):
            shutil.rmtree(d)
            runs.append(os.path.relpath(d, folder))
        elif _killed_ncu(d):
            for name in ("ncu_run.json", "ncu.log"):
                if os.path.exists(os.path.join(d, name)):
                    os.remove(os.path.join(d, name))
            ncu.append(os.path.relpath(d, folder))
    return runs, ncu


def same_time(results: str, when: float | None = None) -> int:
    """Give every file and folder under results the one time `when` (now by default);
    returns how many."""
    ns = int((time.time() if when is None else when) * 1e9)
    n = 0
    for here, dirs, files in os.walk(results):
        for name in dirs + files:
            path = os.path.join(here, name)
            if not os.path.islink(path):
                os.utime(path, ns=(ns, ns))
                n += 1
    os.utime(results, ns=(ns, ns))
    return n


def restore(results: str, archives: list[str]) -> dict:
    """Unpack the archives, leave out what was unfinished, copy their runs into results and
    give it all one time (module doc); returns the counts and what was left out."""
    for a in archives:
        if not os.path.isfile(a):
            raise RestoreError(f"{a}: no such file")
    os.makedirs(results, exist_ok=True)
    packed, runs, ncu = 0, [], []
    with tempfile.TemporaryDirectory(dir=results, prefix=".restore-") as tmp:
        roots = []
        for i, a in enumerate(archives):
            root, n = unpack(a, os.path.join(tmp, str(i)))
            r, c = drop_unfinished(root)
            packed, runs, ncu = packed + n, runs + r, ncu + c
            roots.append(root)
        for root in roots:
            for name in KEPT:
                if os.path.isdir(os.path.join(root, name)):
                    shutil.copytree(os.path.join(root, name), os.path.join(results, name), dirs_exist_ok=True)
    r, c = drop_unfinished(results)
    same_time(results)
    kept = {os.path.relpath(d, results) for d in glob.glob(os.path.join(results, RUN_GLOB)) if _finished(d)}
    # left out, and not restored finished from another archive either
    return {"archives": len(archives), "packed": packed, "runs": len(kept),
            "unfinished_runs": sorted(set(runs + r) - kept),
            "unfinished_ncu": sorted(d for d in set(ncu + c)
                                     if not os.path.exists(os.path.join(results, d, "ncu.json")))}


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) < 2 or args[0] in ("-h", "--help"):
        print("usage: fusionlab restore RESULTS ARCHIVE [ARCHIVE ...]\n\n" + __doc__.split("\n\n")[0])
        return 0 if args and args[0] in ("-h", "--help") else 2
    got = restore(args[0], args[1:])
    print(f"{args[0]}: {got['runs']} runs from {got['archives']} archive(s); left out "
          f"{len(got['unfinished_runs'])} unfinished run(s) and {len(got['unfinished_ncu'])} killed Nsight "
          f"Compute record(s); every file given one time")
    for d in got["unfinished_runs"]:
        print(f"  left out a run (no run.json): {d}")
    for d in got["unfinished_ncu"]:
        print(f"  left out an Nsight Compute record (no ncu.json): {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
