"""One sweep at a time per results folder, and nothing to clean up after a crash.

Snakemake's own lock (files in .snakemake/locks) outlives a Snakemake process that is
killed (kill -9, the OOM killer, a lost node): the same command then stops until
`snakemake --unlock`. The workflow profiles turn it off (`nolock`), and the Snakefile's
onstart takes this lock instead: an exclusive flock on RESULTS/.sweep.lock, held by the
main Snakemake process for as long as it lives. The kernel drops a flock when its
process ends, however it ends, so a killed sweep leaves no stale lock and the same
command resumes it; while a sweep is alive, a second one on the same results folder
(from this or another checkout, or another host sharing the folder over NFS) stops
before it runs anything, naming the first (pid, host, start time, command).

Where the file system has no flock (ENOLCK, EOPNOTSUPP), the file's record is the lock:
a holder whose pid no longer exists on this host is stale and taken over; one from
another host is respected (delete the file if that sweep is gone).

A sweep killed alone (kill -9 of Snakemake, not its process group) can leave its jobs
running: each holds its run folder (core.owner). While one lives, the folder is not free:
`acquire` refuses, naming their pids, and `holder` reports them.

    python -m fusionlab.plan.sweep_lock RESULTS    # who holds it, if anyone
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time

from fusionlab.core import owner as run_owner

LOCK_FILE = ".sweep.lock"
_held: dict[str, int] = {}   # results folder -> open fd; closing it (or exiting) lets go


class Busy(RuntimeError):
    """Another live sweep holds the results folder."""


def lock_path(results: str) -> str:
    return os.path.join(os.path.abspath(results), LOCK_FILE)


def _command() -> str:
    argv = list(sys.argv)
    if argv and os.path.basename(argv[0]) == "__main__.py":    # python -m snakemake ...
        argv[0] = os.path.basename(os.path.dirname(argv[0]))
    return " ".join(argv)


def _record() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "start_unix": time.time(),
            "argv": _command()}


_read = run_owner.read_record


def describe(holder: dict | None) -> str:
    if not holder:
        return "another sweep (no record of it yet)"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("start_unix", 0)))
    return (f"pid {holder.get('pid')} on {holder.get('host')}, started {started}: "
            f"{holder.get('argv', '?')}")


def _busy(results: str, holder: dict | None) -> Busy:
    return Busy(f"fusionlab: another sweep is running on {os.path.abspath(results)} "
                f"({describe(holder)}). Two sweeps must not write one results folder: wait for it "
                f"to end, or stop it, then run the same command again (a sweep that was killed "
                f"holds no lock; rerunning resumes it). Or use another folder: --config results=...")


def orphans(results: str) -> list[dict]:
    """Live processes that own a run folder of results (core.owner.live_owners): a killed
    sweep's jobs still running, or another sweep's."""
    return run_owner.live_owners(results)


def describe_orphans(found: list[dict]) -> str:
    return "; ".join(f"pid {o.get('pid')} on {o.get('host')} ({o.get('role', '?')}) in "
                     f"{o['run_dir']}" for o in found)


def _orphaned(results: str, found: list[dict]) -> Busy:
    pids = " ".join(str(o.get("pid")) for o in found)
    return Busy(f"fusionlab: {len(found)} process(es) of an earlier sweep still run on "
                f"{os.path.abspath(results)}: {describe_orphans(found)}. They would overwrite "
                f"this sweep's runs: wait for them to end, or stop them (kill {pids}), then run "
                f"the same command again")


def _write(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, (json.dumps(_record()) + "\n").encode())
    os.fsync(fd)


def acquire(results: str) -> str:
    """Take the results folder's lock for this process (kept until it exits or release());
    raise Busy when a live sweep holds it. Returns the lock file's path."""
    path = lock_path(results)
    if path in _held:
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)   # not inherited by the jobs (O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            os.close(fd)
            raise _busy(results, _read(path)) from None
        if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
            os.close(fd)
            raise
        holder = _read(path)   # no flock here: the record itself is the lock
        if holder and holder.get("pid") != os.getpid() and (
                holder.get("host") != socket.gethostname() or run_owner.alive(int(holder.get("pid", 0)))):
            os.close(fd)
            raise _busy(results, holder) from None
    found = orphans(results)
    if found:
        os.close(fd)
        raise _orphaned(results, found)
    _write(fd)
    _held[path] = fd
    return path


def release(results: str) -> None:
    """Let go of the lock (the process's exit does the same) and clear its record."""
    path = lock_path(results)
    fd = _held.pop(path, None)
    if fd is None:
        return
    try:
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def holder(results: str) -> dict | None:
    """The live sweep holding results, or None."""
    path = lock_path(results)
    if not os.path.exists(path):
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return _read(path) or {}
            return _read(path)
        return None
    finally:
        os.close(fd)


def stopped(results: str) -> dict | None:
    """The record of a sweep that ended without letting go (killed): the lock file names
    a pid on this host that no longer runs, and no live process holds the lock. None
    otherwise (a live sweep, one that let go, one from another host, or no lock file)."""
    rec = _read(lock_path(results))
    if not rec or rec.get("host") != socket.gethostname() or not isinstance(rec.get("pid"), int):
        return None
    if run_owner.alive(rec["pid"]):
        return None
    live = holder(results)
    return rec if live is None or live.get("pid") == rec["pid"] else None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m fusionlab.plan.sweep_lock RESULTS", file=sys.stderr)
        return 2
    h = holder(argv[0])
    found = orphans(argv[0]) if h is None else []
    print(f"held by {describe(h)}" if h is not None else
          f"not free: {len(found)} process(es) of an earlier sweep still run: {describe_orphans(found)}"
          if found else "free")
    return 0


if __name__ == "__main__":
    sys.exit(main())
