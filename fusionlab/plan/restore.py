"""Packed records unpacked into a results folder, ready for a sweep to go on from them.

A pack is a tar archive of a sweep's run folders without their profiles (`.nsys-rep`,
`.sqlite`): `benchmarks/gpu/real_models.sh` writes them (its files under the sweep's
results folder, e.g. `results/real-models/runs/...`), and the recorded parts under
`benchmarks/results/` keep theirs as `records.tar.xz` (`runs/...`).

    fusionlab restore RESULTS ARCHIVE [ARCHIVE ...]

RESULTS is resolved once (its real path); inside it no symbolic link is followed: a
`runs/` or `device/` that is a link, or a link anywhere under them, is refused before
anything is written, and nothing is written or removed outside RESULTS. Restore holds the
results folder's sweep lock (plan.sweep_lock) from start to end: while a live sweep holds
it, or a killed sweep's jobs still run there, restore refuses and changes nothing.

Every archive must exist and be a tar archive of plain files and folders only, each inside
(the tar module's `data` filter; a leading `/` is stripped), and the sizes its headers
state (a sparse member counts its full size) must sum to at most MAX_BYTES (4 GiB;
FUSIONLAB_RESTORE_MAX_BYTES sets another) and fit the free disk. Each archive is unpacked
into a staging folder of its own inside RESULTS (`.restore-*`, removed at the end), and in
each:

- a run folder with neither `run.json` nor `unsupported.json` is left out (an `ncu.json`
  alone does not finish a run): a run still going, or killed, when it was packed. Its
  `timing.json` may be a killed process's "process died" record, which the sweep would take
  as the run's result;
- an Nsight Compute record that a killed job left (`ncu_run.json` without `ncu.json`, its
  reason "process died") is left out with its `ncu.log`, so the sweep measures it again;
- a run packed without its Nsight report whose files were made from two profiles (stale):
  by the times the archive keeps, its `run.json` older than its `timing.json`, or a file
  made from the report (`metrics.json`, `kernels.csv`, `attribution.csv`) older than its
  `run.json`, as a sweep stopped between a run's profile and its export leaves it.

A finished run without its report (`recorded_without_profile`) is one the sweep goes on
from: the workflow takes its `metrics.json`, `kernels.csv` and `attribution.csv` as they
are and profiles it no more (workflow/rules/common.smk).

A run comes whole from one archive: a run folder finished in two archives with different
files is refused, naming the run and both archives (the same folder twice is one run).
Only when every archive has passed is RESULTS changed: each run folder is moved in whole
by rename (a folder already there is replaced whole, never merged), each other file of
`runs/` and `device/` replaced by rename in the order given (what a pack holds besides,
tables, figures and summary, is made again by the sweep or `regenerate`). The same two
checks then run over RESULTS, and every file and folder under it gets one time, now. tar
keeps each file's time, and Snakemake runs a step again (and every step after it) where an
input is newer than its output by any amount, even a nanosecond.
"""
from __future__ import annotations

import filecmp
import json
import os
import shutil
import stat
import sys
import tarfile
import tempfile
import time

from fusionlab.core.io import printable, read_json
from fusionlab.plan import sweep_lock

RUN_DEPTH = 6                # runs/<profiler>/<model>/<variant>/<setting>/<batch>/r<k>: plan.sweep.RUN_PATTERN
KEPT = ("runs", "device")    # what is restored of a pack
KILLED = "process died"      # the reason of the record a runner writes first (runner.record)
MAX_BYTES = 4 << 30          # the sum of an archive set's member sizes, unpacked
STAGING = ".restore-"


class RestoreError(RuntimeError):
    """An archive that cannot be restored (missing, not a tar archive, too large, no runs/ in
    it, a run in two archives), or a results folder that cannot take it (a link inside, a
    live sweep)."""


def max_bytes() -> int:
    """The cap on what the archives unpack to: FUSIONLAB_RESTORE_MAX_BYTES, else MAX_BYTES."""
    raw = os.environ.get("FUSIONLAB_RESTORE_MAX_BYTES", "")
    try:
        return int(raw) if raw.strip() else MAX_BYTES
    except ValueError:
        raise RestoreError(f"FUSIONLAB_RESTORE_MAX_BYTES={raw!r} is not a whole number of bytes") from None


def _refuse_links(results: str) -> None:
    """Raise RestoreError naming the first symbolic link at or under RESULTS/runs and
    RESULTS/device (walked without following one)."""
    for name in KEPT:
        top = os.path.join(results, name)
        if os.path.islink(top):
            raise RestoreError(f"{top} is a symbolic link: restore follows none inside the results folder "
                               f"(restore into the folder it points to instead)")
        for here, dirs, files in os.walk(top):
            for n in dirs + files:
                if os.path.islink(os.path.join(here, n)):
                    raise RestoreError(f"{os.path.join(here, n)} is a symbolic link: restore follows none "
                                       f"inside the results folder")


def _runs_root(folder: str) -> str:
    """The folder under `folder` that holds `runs/` (itself, or one below it)."""
    for here, dirs, _ in os.walk(folder):
        if "runs" in dirs:
            return here
        dirs.sort()
    raise RestoreError("no runs/ folder in it")


def _members(archive: str) -> list[tarfile.TarInfo]:
    """The archive's members, each a plain file or folder that stays inside the folder it is
    unpacked to (RestoreError otherwise)."""
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
    except (tarfile.TarError, EOFError, OSError) as e:
        raise RestoreError(f"{archive}: cannot be unpacked ({type(e).__name__}: {e})") from e
    for m in members:
        parts = m.name.lstrip("/").split("/")
        if not (m.isfile() or m.isdir()) or ".." in parts:
            raise RestoreError(f"{archive}: cannot be unpacked ({m.name!r} is not a plain file or folder "
                               f"inside the results folder)")
    return members


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
    return root, len(run_dirs(root))


def run_dirs(folder: str) -> list[str]:
    """The run folders (`runs/` six levels down, named r*) under folder, found without
    following a symbolic link, sorted."""
    found = []
    top = os.path.join(folder, "runs")
    base = top.count(os.sep)
    for here, dirs, _ in os.walk(top):
        depth = here.count(os.sep) - base
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(here, d)))
        if depth == RUN_DEPTH - 1:
            found += [os.path.join(here, d) for d in dirs if d.startswith("r")]
            dirs[:] = []
    return found


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
    cannot run it (unsupported.json); an ncu.json alone is not."""
    return any(os.path.isfile(os.path.join(d, n)) for n in ("run.json", "unsupported.json"))


PROFILE_FILES = ("report.nsys-rep", "report.sqlite")          # what a pack leaves out
FROM_PROFILE = ("metrics.json", "kernels.csv", "attribution.csv")  # the run's files made from them


def _has_profile(d: str) -> bool:
    return any(os.path.lexists(os.path.join(d, n)) for n in PROFILE_FILES)


def _mtime(d: str, name: str) -> float | None:
    p = os.path.join(d, name)
    return os.stat(p).st_mtime if os.path.isfile(p) else None


def stale(d: str) -> bool:
    """A run folder packed without its Nsight report whose files, by their times, come from
    two profiles: run.json older than timing.json, or one of FROM_PROFILE older than
    run.json (module doc)."""
    if _has_profile(d):
        return False
    run, timing = _mtime(d, "run.json"), _mtime(d, "timing.json")
    if run is None:
        return False
    if timing is not None and run < timing:
        return True
    return any(t is not None and t < run for t in (_mtime(d, n) for n in FROM_PROFILE))


def recorded_without_profile(d: str) -> bool:
    """A finished run kept without its Nsight report and its export: run.json and
    metrics.json there, neither of PROFILE_FILES."""
    return (all(os.path.isfile(os.path.join(d, n)) for n in ("run.json", "metrics.json"))
            and not _has_profile(d))


def other_gpu(run_dirs: list[str], names: set[str]) -> tuple[str, str] | None:
    """The first recorded run (folder, its run.json's gpu) whose GPU is none of names: a
    results folder restored on another GPU model than the one that would go on from it."""
    for d in run_dirs:
        gpu = (read_json(os.path.join(d, "run.json")) or {}).get("gpu")
        if isinstance(gpu, str) and gpu and gpu not in names:
            return d, gpu
    return None


def other_axes(d: str, axes) -> list[str] | None:
    """The size axes a recorded run (run.json's `sizes`) was built with, where they are not
    `axes` (its model's axes now: a factory whose arguments were renamed since); None where
    they are the same or the run records none."""
    got = (read_json(os.path.join(d, "run.json")) or {}).get("sizes")
    if not isinstance(got, dict) or set(got) == set(axes):
        return None
    return sorted(map(str, got))


def drop_stale(folder: str) -> list[str]:
    """Remove the stale run folders (stale()) under folder; returns them relative to folder."""
    out = []
    for d in run_dirs(folder):
        if stale(d):
            shutil.rmtree(d)
            out.append(os.path.relpath(d, folder))
    return out


def drop_unfinished(folder: str) -> tuple[list[str], list[str]]:
    """Remove the run folders without run.json or unsupported.json and the Nsight Compute
    records a killed job left (module doc) under folder; returns (runs removed, ncu records
    removed), as run folders relative to folder."""
    runs, ncu = [], []
    for d in run_dirs(folder):
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


def _check_sizes(archives: list[str], results: str) -> int:
    """The bytes the archives unpack to, by their headers (a sparse member at its full
    size); RestoreError when over max_bytes() or the free space of results."""
    total = 0
    for a in archives:
        total += sum(m.size for m in _members(a) if m.isfile())
    cap = max_bytes()
    if total > cap:
        raise RestoreError(f"the archives unpack to {total} bytes, over the cap of {cap} bytes "
                           f"(FUSIONLAB_RESTORE_MAX_BYTES sets another)")
    here = results
    while not os.path.isdir(here):          # the nearest folder that exists: results may not yet
        here = os.path.dirname(here)
    free = shutil.disk_usage(here).free
    if total > free:
        raise RestoreError(f"the archives unpack to {total} bytes; {results} has {free} bytes free")
    return total


def _same_folder(a: str, b: str) -> bool:
    """Two run folders holding the same file names with the same bytes."""
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.common_funny or cmp.funny_files:
        return False
    _, diff, odd = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not diff and not odd and all(_same_folder(os.path.join(a, d), os.path.join(b, d))
                                        for d in cmp.common_dirs)


def _other_files(root: str, runs: set[str]) -> list[str]:
    """The files of root's runs/ and device/ outside its run folders, relative to root."""
    out = []
    for name in KEPT:
        for here, dirs, files in os.walk(os.path.join(root, name)):
            dirs[:] = [d for d in dirs if os.path.relpath(os.path.join(here, d), root) not in runs]
            out += [os.path.relpath(os.path.join(here, f), root) for f in files]
    return sorted(out)


def _make_dirs(results: str, rel: str) -> None:
    """Make results/rel's folders one at a time, refusing a link on the way."""
    here = results
    for part in rel.split(os.sep):
        here = os.path.join(here, part)
        if os.path.islink(here) or (os.path.exists(here) and not os.path.isdir(here)):
            raise RestoreError(f"{here} is a symbolic link or not a folder: restore follows none inside "
                               f"the results folder")
        if not os.path.isdir(here):
            os.mkdir(here)


def _restore_locked(results: str, archives: list[str], staging: str) -> dict:
    _refuse_links(results)
    packed, left_runs, left_ncu, left_stale = 0, [], [], []
    chosen: dict[str, tuple[str, str]] = {}          # run (relative) -> (its folder in staging, archive)
    others: dict[str, str] = {}                      # other file (relative) -> its path in staging
    for i, a in enumerate(archives):
        root, n = unpack(a, os.path.join(staging, str(i)))
        r, c = drop_unfinished(root)
        packed, left_runs, left_ncu, left_stale = packed + n, left_runs + r, left_ncu + c, left_stale + drop_stale(root)
        runs = {os.path.relpath(d, root): d for d in run_dirs(root)}
        for rel, d in runs.items():
            if rel in chosen and not _same_folder(chosen[rel][0], d):
                raise RestoreError(f"run {rel} is in {chosen[rel][1]} and in {a} with different files: a run "
                                   f"comes whole from one archive (restore them one at a time, or leave one out)")
            chosen.setdefault(rel, (d, a))
        for rel in _other_files(root, set(runs)):
            others[rel] = os.path.join(root, rel)
    trash = os.path.join(staging, "replaced")
    os.mkdir(trash)
    for k, (rel, (src, _)) in enumerate(sorted(chosen.items())):
        _make_dirs(results, os.path.dirname(rel))
        dest = os.path.join(results, rel)
        if os.path.lexists(dest):
            os.rename(dest, os.path.join(trash, str(k)))
        os.rename(src, dest)
    for rel, src in sorted(others.items()):
        _make_dirs(results, os.path.dirname(rel))
        if os.path.isdir(os.path.join(results, rel)) and not os.path.islink(os.path.join(results, rel)):
            raise RestoreError(f"{os.path.join(results, rel)} is a folder; the archive holds a file there")
        os.replace(src, os.path.join(results, rel))
    return {"packed": packed, "runs_left": left_runs, "ncu_left": left_ncu, "stale_left": left_stale}


def restore(results: str, archives: list[str]) -> dict:
    """Check and unpack the archives, leave out what was unfinished, move their runs into
    results whole, and give it all one time, holding the sweep lock (module doc); returns
    the counts and what was left out."""
    for a in archives:
        if not os.path.isfile(a):
            raise RestoreError(f"{a}: {'a folder, not an archive' if os.path.isdir(a) else 'no such file'}")
    results = os.path.realpath(results)
    if os.path.exists(results) and not os.path.isdir(results):
        raise RestoreError(f"{results} is not a folder")
    _check_sizes(archives, results)          # before anything is written
    _refuse_links(results)
    os.makedirs(results, exist_ok=True)
    try:
        sweep_lock.acquire(results)
    except sweep_lock.Busy as e:
        raise RestoreError(f"{e}; restore changed nothing") from None
    try:
        with tempfile.TemporaryDirectory(dir=results, prefix=STAGING) as staging:
            got = _restore_locked(results, archives, staging)
        r, c = drop_unfinished(results)
        same_time(results)
    finally:
        sweep_lock.release(results)
    kept = {os.path.relpath(d, results) for d in run_dirs(results) if _finished(d)}
    # left out, and not restored finished from another archive either
    return {"archives": len(archives), "packed": got["packed"], "runs": len(kept),
            "unfinished_runs": sorted(set(got["runs_left"] + r) - kept),
            "stale_runs": sorted(set(got["stale_left"]) - kept),
            "unfinished_ncu": sorted(d for d in set(got["ncu_left"] + c)
                                     if not os.path.exists(os.path.join(results, d, "ncu.json")))}


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        print("usage: fusionlab restore RESULTS ARCHIVE [ARCHIVE ...]\n\n" + __doc__.split("\n\n")[0])
        return 0
    if len(args) < 2:
        print("fusionlab restore: error: give the results folder and at least one archive "
              "(fusionlab restore RESULTS ARCHIVE [ARCHIVE ...])", file=sys.stderr)
        return 2
    got = restore(args[0], args[1:])
    print(printable(f"{args[0]}: {got['runs']} runs from {got['archives']} archive(s); left out "
                    f"{len(got['unfinished_runs'])} unfinished run(s), {len(got['stale_runs'])} stale run(s) and "
                    f"{len(got['unfinished_ncu'])} killed "
                    f"Nsight Compute record(s); every file given one time"))
    for d in got["unfinished_runs"]:
        print(printable(f"  left out a run (no run.json): {d}"))
    for d in got["stale_runs"]:
        print(printable(f"  left out a run (files from two profiles, the report not packed): {d}"))
    for d in got["unfinished_ncu"]:
        print(printable(f"  left out an Nsight Compute record (no ncu.json): {d}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
