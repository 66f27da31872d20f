"""The host gate: nothing of a sweep runs on the host while one of its runs measures.

A host-bound measurement (Python, the dispatcher, the launch path) slows beside heavy
work on the same host: the sweep's own compiles, nsys exports and stats, Nsight Compute
replays, table and figure jobs (-14% to +28% measured on real networks on a 4-GPU host).
Pairing eager with the variant in one process cancels that only where both sides are
host-bound alike. So a measurement pauses the sweep around it:

- sweep root: the main process of a sweep (Snakemake's), registered by register_sweep as
  a file `sweep.PID` in the gate folder, locked by it for its lifetime. Every sweep of
  this user on this host registers in the same folder, so they share the gate.
- measurer: a process inside `quiet()` (the untraced timing windows, a traced measured
  range), registered as `quiet.PID`, locked while it measures.
- heavy: every other live descendant of a live sweep root, less the measurers, their
  ancestors (the job's shell, nsys) and their descendants. `quiet()` stops each with
  SIGSTOP (its pid and start time kept in the `stopped` file) when it begins and at every
  `refresh()` (between windows: a job started since), and the last measurer to leave
  continues them (SIGCONT). A guard process started by each measurer continues them
  when the measurer dies inside `quiet()`, however it dies.

What the gate cannot pause (another user's work, a process outside any sweep) the
window's own host-load check sees (CpuMeter; runner.timing discards and retimes windows
timed in a disturbed state). Under a scheduler with no sweep root on the node (SLURM)
the gate pauses nothing and says so in the record (`roots`: 0).

Plain functions over /proc and flock; no torch."""
from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time

from fusionlab.jobs import slots

GATE_LOCK = "gate.lock"      # taken (exclusively, briefly) to change the gate's state
STOPPED = "stopped"          # the pids the gate stopped, one `PID STARTTIME` per line
ENV_OFF = "FUSIONLAB_HOST_GATE"   # "off": quiet() pauses nothing (the window check stays)


def gate_dir() -> str:
    """The node-local gate folder, shared by every sweep of this user on this host."""
    d = os.path.join(slots.lock_dir(), "gate")
    os.makedirs(d, exist_ok=True)
    return d


def _live_pids(directory: str, prefix: str) -> list[int]:
    """The pids of the live `prefix.PID` files (locked by a running process: slots._live,
    which removes the stale ones)."""
    return sorted(int(name.partition(".")[2]) for name, _ in slots._live(directory, rf"{prefix}\.\d+"))


def register_sweep(directory: str | None = None) -> str:
    """Register this process as a sweep root for its lifetime (module doc)."""
    return slots._hold_file(directory or gate_dir(), f"sweep.{os.getpid()}")


def unregister_sweep(directory: str | None = None) -> None:
    slots._drop(os.path.join(directory or gate_dir(), f"sweep.{os.getpid()}"))


def processes() -> dict[int, tuple[int, str, int]]:
    """pid -> (parent pid, state, start time in clock ticks) of every process (/proc)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = text.rpartition(")")[2].split()
        with contextlib.suppress(IndexError, ValueError):
            out[int(name)] = (int(fields[1]), fields[0], int(fields[19]))
    return out


def _descendants(procs: dict, roots) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [r for r in roots if r in procs]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _ancestors(procs: dict, pid: int) -> set[int]:
    out = set()
    while pid in procs and pid not in out and pid > 1:
        out.add(pid)
        pid = procs[pid][0]
    return out


def heavy(procs: dict, roots: list[int], measurers: list[int], me: int | None = None) -> set[int]:
    """The processes a measurement pauses (module doc): live descendants of the roots,
    less the roots, the measurers (and `me`), their ancestors and descendants, and zombies."""
    keep = set(roots)
    for m in [*measurers, *([me] if me else [])]:
        keep |= _ancestors(procs, m) | _descendants(procs, [m]) | {m}
    return {p for p in _descendants(procs, roots) - keep if procs[p][1] not in "ZXx"}


@contextlib.contextmanager
def _gate_lock(directory: str):
    fd = os.open(os.path.join(directory, GATE_LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read_stopped(directory: str) -> set[tuple[int, int]]:
    try:
        with open(os.path.join(directory, STOPPED)) as f:
            return {(int(a), int(b)) for a, b in (line.split() for line in f if line.strip())}
    except (OSError, ValueError):
        return set()


def _write_stopped(directory: str, entries: set[tuple[int, int]]) -> None:
    tmp = os.path.join(directory, f".{STOPPED}.{os.getpid()}")
    with open(tmp, "w") as f:
        f.writelines(f"{p} {t}\n" for p, t in sorted(entries))
    os.replace(tmp, os.path.join(directory, STOPPED))


def _stop_heavy(directory: str) -> int:
    """Under the gate lock: SIGSTOP every heavy process not stopped yet. Returns how many
    processes the gate holds stopped."""
    procs = processes()
    roots = _live_pids(directory, "sweep")
    pids = heavy(procs, roots, _live_pids(directory, "quiet"), os.getpid()) if roots else set()
    stopped = _read_stopped(directory)
    new = {(p, procs[p][2]) for p in pids} - stopped
    for pid, _ in new:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGSTOP)
    if new:
        _write_stopped(directory, stopped | new)
    return len(stopped | new)


def resume_if_idle(directory: str) -> int:
    """SIGCONT every process the gate stopped, unless a live measurer remains (then
    nothing). Returns how many were continued."""
    with _gate_lock(directory):
        if _live_pids(directory, "quiet"):
            return 0
        stopped = _read_stopped(directory)
        procs = processes()
        for pid, start in stopped:
            if pid in procs and procs[pid][2] == start:   # the same process, not a reused pid
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGCONT)
        if stopped:
            _write_stopped(directory, set())
        return len(stopped)


class Gate:
    """This process's hold on the gate while it measures (quiet): refresh() between
    windows stops heavy work started since; `info` is the record of it: the sweeps
    registered (roots), the processes held stopped at most (stopped), the seconds waited
    for the gate's lock (wait_s) and held (held_s, held_unix: the span the sweep was
    paused for this process)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.info = {"roots": 0, "stopped": 0, "wait_s": 0.0, "refreshes": 0, "measurers": 1, "held_s": 0.0}

    def refresh(self) -> None:
        with _gate_lock(self.directory):
            self.info["stopped"] = max(self.info["stopped"], _stop_heavy(self.directory))
            self.info["measurers"] = max(self.info["measurers"], len(_live_pids(self.directory, "quiet")))
        self.info["refreshes"] += 1

    def other_measurers(self) -> int:
        return max(0, len(_live_pids(self.directory, "quiet")) - 1)


class _Off:
    info = {"roots": 0, "stopped": 0, "wait_s": 0.0, "refreshes": 0, "measurers": 1, "off": True}

    def refresh(self) -> None:
        pass

    def other_measurers(self) -> int:
        return 0


_GUARD: subprocess.Popen | None = None


def _start_guard(directory: str) -> None:
    """Once per process: a child that continues the stopped processes when this one dies
    (its stdin, this process's pipe, closes)."""
    global _GUARD
    if _GUARD is not None and _GUARD.poll() is None:
        return
    _GUARD = subprocess.Popen([sys.executable, "-m", "fusionlab.jobs.host_gate", "guard", directory],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, close_fds=True,
                              start_new_session=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


@contextlib.contextmanager
def quiet(directory: str | None = None):
    """Measure with the sweep paused (module doc). Yields a Gate (refresh, info). With no
    sweep root on this host, or FUSIONLAB_HOST_GATE=off, it pauses nothing."""
    if os.environ.get(ENV_OFF) == "off" or not hasattr(os, "sched_getaffinity") or not os.path.isdir("/proc"):
        yield _Off()
        return
    directory = directory or gate_dir()
    roots = _live_pids(directory, "sweep")
    gate = Gate(directory)
    gate.info["roots"] = len(roots)
    if not roots:
        yield gate
        return
    _start_guard(directory)
    t0 = time.time()
    with _gate_lock(directory):
        gate.info["wait_s"] = round(time.time() - t0, 4)
        mine = slots._hold_file(directory, f"quiet.{os.getpid()}")
        gate.info["stopped"] = _stop_heavy(directory)
    held = time.time()
    try:
        yield gate
    finally:
        with _gate_lock(directory):
            slots._drop(mine)
        resume_if_idle(directory)
        gate.info["held_s"] = round(time.time() - held, 4)
        gate.info["held_unix"] = [round(held, 3), round(time.time(), 3)]


class CpuMeter:
    """How busy the host's other processes kept its CPUs over a span: from /proc/stat's
    busy time of all CPUs less this process's own CPU time (all its threads), in cores
    (1.0 = one core busy all the span). None where /proc/stat is not readable."""

    def __init__(self):
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._t = self._busy = self._own = None

    @staticmethod
    def _busy_ticks() -> int | None:
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        return sum(v) - v[3] - (v[4] if len(v) > 4 else 0)   # less idle and iowait

    def start(self) -> None:
        t = os.times()
        self._t, self._busy, self._own = time.perf_counter(), self._busy_ticks(), t.user + t.system

    def cores(self) -> float | None:
        """Other processes' busy cores since start()."""
        if self._busy is None:
            return None
        busy, t, now = self._busy_ticks(), os.times(), time.perf_counter()
        if busy is None or now <= self._t:
            return None
        return max(0.0, ((busy - self._busy) / self.hz - (t.user + t.system - self._own)) / (now - self._t))


def _guard(directory: str) -> None:
    """The guard's process: wait for the measurer's pipe to close, then resume_if_idle."""
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(1 << 12):
            pass
    time.sleep(0.05)   # the measurer's quiet file is unlocked by its end
    resume_if_idle(directory)


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "guard":
    _guard(sys.argv[2])
