"""One owner per run folder: the process writing a run's files holds an exclusive flock
on a lock file in the run folder from its start to its exit, and writes only while it
still owns the folder.

A sweep killed with kill -9 can leave its jobs running (orphans). While one lives, its
lock is held: the next sweep on the same results folder sees it (`live_owners`) and
refuses to start, naming the pids. If the folder is removed and made again under it
(someone deleted the results and started over), the orphan's lock is on a file that is
no longer there: `Owner.owns()` is then false and its late writes are dropped, so a
finished run is never overwritten.

Two roles, one lock file each: `runner` (the measuring process, fusionlab.runner) and
`job` (a wrapper that writes the run's record after its runner ended: nsys_profile,
ncu_profile).
"""
from __future__ import annotations

import errno
import fcntl
import glob
import json
import os
import socket
import sys
import time

from fusionlab.core.io import write_json_atomic

LOCK_NAMES = {"runner": ".runner.lock", "job": ".job.lock"}


class Taken(RuntimeError):
    """Another live process owns the run folder."""


class Owner:
    """This process's hold on one run folder (see the module docstring)."""

    def __init__(self, run_dir: str, role: str = "runner"):
        self.run_dir = os.path.abspath(run_dir)
        self.path = os.path.join(self.run_dir, LOCK_NAMES[role])
        os.makedirs(self.run_dir, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)   # O_CLOEXEC: not inherited
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(self.fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise Taken(f"run folder {self.run_dir} is owned by a live process "
                            f"({describe(read_record(self.path))})") from None
            if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)   # no flock: the record alone
            else:
                raise
        self.inode = os.fstat(self.fd).st_ino
        rec = {"pid": os.getpid(), "host": socket.gethostname(), "start_unix": time.time(),
               "role": role, "argv": " ".join(sys.argv)[:500]}
        os.ftruncate(self.fd, 0)
        os.write(self.fd, (json.dumps(rec) + "\n").encode())

    def owns(self) -> bool:
        """True while the lock file this process holds is still the run folder's."""
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def write_json(self, path: str, obj: dict) -> bool:
        """obj as JSON at path, atomically, only while this process owns the folder; False,
        with a line on stderr, when it no longer does."""
        if not self.owns():
            print(f"fusionlab: {self.run_dir} is no longer this process's run folder (removed or "
                  f"taken over); {os.path.basename(path)} not written", file=sys.stderr, flush=True)
            return False
        write_json_atomic(path, obj)
        return True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def hold(run_dir: str, role: str) -> Owner:
    """Owner(run_dir, role), or exit 4 with one line when a live process owns the folder."""
    try:
        return Owner(run_dir, role)
    except Taken as e:
        print(f"fusionlab: {e}; not started", file=sys.stderr, flush=True)
        sys.exit(4)


def alive(pid: int) -> bool:
    """True when a process with this pid exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_record(path: str) -> dict | None:
    try:
        with open(path) as f:
            rec = json.loads(f.read() or "null")
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def describe(rec: dict | None) -> str:
    if not rec:
        return "no record"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec.get("start_unix", 0)))
    return f"pid {rec.get('pid')} on {rec.get('host')}, {rec.get('role', '?')}, started {started}"


def held(path: str) -> bool:
    """True when a live process holds the lock file's flock."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)
    return False


def live_owners(results: str) -> list[dict]:
    """The live processes owning a run folder under results/runs: each lock file's record
    with its run folder (`run_dir`), for those whose lock is held."""
    out = []
    for name in LOCK_NAMES.values():
        for path in sorted(glob.glob(os.path.join(os.path.abspath(results), "runs", "**", name),
                                     recursive=True)):
            if held(path):
                out.append({**(read_record(path) or {}), "run_dir": os.path.dirname(path)})
    return out
