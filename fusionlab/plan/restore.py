"""Packed records unpacked into a results folder, ready for a sweep to go on from them.

A pack is a tar archive of a sweep's run folders without their profiles (`.nsys-rep`,
`.sqlite`): `benchmarks/gpu/real_models.sh` writes them (its files under the sweep's
results folder, e.g. `results/real-models/runs/...`), and the recorded parts under
`benchmarks/results/` keep theirs as `records.tar.xz` (`runs/...`).

    fusionlab restore RESULTS ARCHIVE [ARCHIVE ...]

`restore` unpacks each archive in the order given (a later one's files replace an
earlier one's), under RESULTS, whatever folder above `runs/` its paths carry; members that
are not plain files or folders, or that would land outside that folder, are refused (the
tar module's `data` filter; a leading `/` is stripped). Then:

- a run folder without `run.json` is removed: a run still going, or killed, when it was
  packed. Its `timing.json` may be a killed process's "process died" record, which the
  sweep would take as the run's result;
- an Nsight Compute record without its measurement (`ncu_run.json` without `ncu.json`: a
  job killed while it ran) is removed with its `ncu.log`, so the sweep measures it again;
- every file and folder under RESULTS gets one time, now. tar keeps each file's time, and
  Snakemake runs a step again (and every step after it) where an input is newer than its
  output by any amount, even a nanosecond.
"""
from __future__ import annotations

import glob
import os
import shutil
import sys
import tarfile
import tempfile
import time

RUN_GLOB = os.path.join("runs", "*", "*", "*", "*", "*", "r*")   # plan.sweep.RUN_PATTERN's depth


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
    """Extract with the tar module's `data` filter; on a Python without it (before 3.10.12
    and 3.11.4), the same refusals by hand: only plain files and folders, inside folder."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(folder, filter="data")
        return
    top = os.path.realpath(folder)
    for m in tar.getmembers():
        where = os.path.realpath(os.path.join(folder, m.name.lstrip("/")))
        if not (m.isfile() or m.isdir()) or os.path.commonpath([top, where]) != top:
            raise tarfile.TarError(f"{m.name!r} is not a plain file or folder inside the results folder")
        m.name = m.name.lstrip("/")
    tar.extractall(folder)


def unpack(archive: str, results: str) -> int:
    """Unpack one archive's runs (and what sits beside them: tables, device) under
    results; returns how many run folders it held."""
    if not os.path.isfile(archive):
        raise RestoreError(f"{archive}: no such file")
    with tempfile.TemporaryDirectory(dir=results) as tmp:
        try:
            with tarfile.open(archive) as tar:
                _extract(tar, tmp)
        except (tarfile.TarError, EOFError, OSError) as e:
            raise RestoreError(f"{archive}: cannot be unpacked ({type(e).__name__}: {e})") from e
        try:
            root = _runs_root(tmp)
        except RestoreError as e:
            raise RestoreError(f"{archive}: {e}") from None
        n = len(glob.glob(os.path.join(root, RUN_GLOB)))
        shutil.copytree(root, results, dirs_exist_ok=True)
    return n


def drop_unfinished(results: str) -> tuple[list[str], list[str]]:
    """Remove the run folders without run.json and the Nsight Compute records without
    ncu.json (module doc); returns (runs removed, ncu records removed), as folders."""
    runs, ncu = [], []
    for d in sorted(glob.glob(os.path.join(results, RUN_GLOB))):
        if not os.path.exists(os.path.join(d, "run.json")):
            shutil.rmtree(d)
            runs.append(d)
        elif os.path.exists(os.path.join(d, "ncu_run.json")) and not os.path.exists(os.path.join(d, "ncu.json")):
            for name in ("ncu_run.json", "ncu.log"):
                if os.path.exists(os.path.join(d, name)):
                    os.remove(os.path.join(d, name))
            ncu.append(d)
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
    """Unpack the archives under results, drop what was unfinished, give it all one time
    (module doc); returns the counts."""
    os.makedirs(results, exist_ok=True)
    packed = sum(unpack(a, results) for a in archives)
    runs, ncu = drop_unfinished(results)
    same_time(results)
    kept = sum(os.path.exists(os.path.join(d, "run.json")) for d in glob.glob(os.path.join(results, RUN_GLOB)))
    return {"archives": len(archives), "packed": packed, "runs": kept, "unfinished_runs": runs,
            "unfinished_ncu": ncu}


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) < 2 or args[0] in ("-h", "--help"):
        print("usage: fusionlab restore RESULTS ARCHIVE [ARCHIVE ...]\n\n" + __doc__.split("\n\n")[0])
        return 0 if args and args[0] in ("-h", "--help") else 2
    got = restore(args[0], args[1:])
    print(f"{args[0]}: {got['runs']} runs from {got['archives']} archive(s); removed "
          f"{len(got['unfinished_runs'])} unfinished run(s) and {len(got['unfinished_ncu'])} unfinished "
          f"Nsight Compute record(s); every file given one time")
    for d in got["unfinished_runs"]:
        print(f"  removed run (no run.json): {os.path.relpath(d, args[0])}")
    for d in got["unfinished_ncu"]:
        print(f"  removed Nsight Compute record (no ncu.json): {os.path.relpath(d, args[0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
