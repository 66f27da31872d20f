"""GPU slots: one measuring process per GPU at a time, on its own cores.

A sweep on a box with N GPUs runs its experiments as separate processes, several at once.
Each process

1. picks a GPU before CUDA starts (`claim`): a GPU no live process has claimed, or one
   whose only claimant is measuring (it lets go when its measured range ends), waiting
   until there is one (waiting processes in the order they began to wait). So its CUDA
   start-up and nsys's capture start run while the holder measures, and it never queues
   behind a build or a check (a cold compile: seconds to twenty minutes) while another GPU
   is idle;
2. waits for that GPU's lock (`hold`: an exclusive flock on a file in a node-local
   folder) before it builds, checks, warms up and measures; it builds and checks (a cold
   compile) on the GPU's own cores (the plan's measure cores) and the shared ones
   (`build_cpus`), and from the warm-up on it runs on the GPU's own cores, which nothing
   else uses;
3. lets go as soon as its measured range ends: the report, the record, nsys's finish and
   the post-processing of finished runs happen outside the lock, on the other cores.

The kernel drops a flock when its process ends, however it ends (exit, crash, kill,
time limit), so a failed or killed job always frees its slot. Two processes never hold
one GPU's lock at once, whichever Snakemake jobs or sweeps started them (the lock folder
is per user and per host). Under a scheduler (SLURM) that gives each job its own GPU,
nothing is claimed or locked: the job uses the GPU it was given, and records it.

Plain functions, used by the Snakefile (plan) and by the runner (claim, hold).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import time
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Slot:
    gpu: str                 # the GPU's index as CUDA_VISIBLE_DEVICES names it
    cpus: tuple[int, ...]    # the cores the measuring process runs on ("" = not pinned)
    claim_wait_s: float = field(default=0.0, compare=False)   # seconds `claim` waited for it


def parse_cpus(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    out = []
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def format_cpus(cpus) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8' (the inverse of parse_cpus)."""
    cpus, out, i = sorted(cpus), [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def plan(gpus: list[str], cpus: list[int], per_gpu: int = 4) -> tuple[list[Slot], list[int]]:
    """Split the cores: `per_gpu` measure cores for each GPU (the highest-numbered ones),
    the rest for everything else (process start, imports, nsys, export, stats, metrics).
    With too few cores for that (fewer than per_gpu per GPU plus as many again for the
    rest) it tries 2 per GPU, and else pins nothing. Returns (slots, other cores)."""
    cpus = sorted(cpus)
    for k in (per_gpu, 2):
        if k >= 1 and len(cpus) >= k * len(gpus) + max(k, 2):
            rest = cpus[: len(cpus) - k * len(gpus)]
            mine = cpus[len(rest):]
            return [Slot(g, tuple(mine[i * k:(i + 1) * k])) for i, g in enumerate(gpus)], rest
    return [Slot(g, ()) for g in gpus], cpus


def format_slots(slots: list[Slot]) -> str:
    """The runner's --slots value: '0=12-13/1=14-15' (GPU = its measure cores)."""
    return "/".join(f"{s.gpu}={format_cpus(s.cpus)}" for s in slots)


def parse_slots(text: str) -> list[Slot]:
    if not re.fullmatch(r"[0-9]+=[0-9,\-]*(/[0-9]+=[0-9,\-]*)*", text):
        raise ValueError(f"--slots {text!r}: expected GPU=CORES[/GPU=CORES...], e.g. 0=12-15/1=8-11")
    return [Slot(g, tuple(parse_cpus(c))) for g, c in (p.split("=") for p in text.split("/"))]


def lock_dir() -> str:
    """The node-local folder of the GPU locks, shared by every fusionlab sweep of this user."""
    d = os.path.join(tempfile.gettempdir(), f"fusionlab-gpu-locks-{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    return d


MEASURING = "measuring"   # a claim file's text once its process measures (mark_measuring)
POLL_S = 0.2              # how often a waiting `claim` looks again
_HELD: dict[str, int] = {}   # this process's claim and waiting files -> their open descriptors (the flock)


def _forget_held() -> None:
    """In a forked child: close the parent's claim descriptors (the parent keeps its
    locks), so that a child outliving its parent never keeps the parent's GPU claimed."""
    for fd in _HELD.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_held)


def _hold_file(directory: str, name: str, text: str = "") -> str:
    """Create directory/name holding text, locked by this process (an exclusive flock, to
    _drop or the process's end). Written under a temporary name and renamed: a file under
    its own name is always locked while its process runs. Returns its path."""
    path, tmp = os.path.join(directory, name), os.path.join(directory, f".{name}.tmp")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # a file of this process's own: never waits
    os.pwrite(fd, text.encode(), 0)
    os.rename(tmp, path)
    _HELD[path] = fd
    return path


def _drop(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)
    fd = _HELD.pop(path, None)
    if fd is not None:
        os.close(fd)


def _live(directory: str, pattern: str) -> list[tuple[str, str]]:
    """(name, text) of the files matching pattern that a running process locks; a file no
    one locks is stale (its process ended, however it ended) and removed."""
    out = []
    for name in sorted(os.listdir(directory)):
        if not re.fullmatch(pattern, name):
            continue
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:   # locked: its process runs
            out.append((name, os.pread(fd, 64, 0).decode(errors="replace").strip()))
        else:
            with contextlib.suppress(OSError):
                os.remove(path)
        finally:
            os.close(fd)
    return out


def claim_states(directory: str, gpu: str) -> list[str]:
    """The states of the live claims on this GPU ("" = starting, building or checking;
    MEASURING)."""
    return [text for _, text in _live(directory, rf"gpu{re.escape(gpu)}\.claim\.\d+")]


def free_to_claim(states: list[str]) -> bool:
    """A GPU a new process may claim: no live claim, or one whose process is measuring."""
    return not states or states == [MEASURING]


def _older_waiters(directory: str, since: float, gpus: set[str]) -> int:
    """Live waiting processes (their `wait.PID` files: when each began to wait, and the
    GPUs it waits for) that began before this one (since; then pid, breaks a tie) and wait
    for one of these GPUs."""
    me = (since, os.getpid())
    n = 0
    for name, text in _live(directory, r"wait\.\d+"):
        when, _, wants = text.partition(" ")
        with contextlib.suppress(ValueError):
            if (float(when), int(name.split(".")[1])) < me and gpus & set(wants.split(",")):
                n += 1
    return n


def claim(slots: list[Slot], directory: str | None = None, poll_s: float = POLL_S) -> Slot:
    """Wait until a GPU is free to claim (free_to_claim; the one with fewer claims, then
    the lowest index, first) and claim it for this process, under the host's claims lock.
    Waiting processes are served in the order they began to wait. A process claims a GPU
    once. Call before CUDA starts; set CUDA_VISIBLE_DEVICES to slot.gpu. The Slot returned
    carries the seconds waited."""
    directory = directory or lock_dir()
    mine = [s for s in slots if claim_path(directory, s.gpu) in _HELD]
    if mine and len(mine) == len(slots):
        raise RuntimeError(f"this process already claims GPU {', '.join(s.gpu for s in mine)}")
    t0 = time.time()
    waiting = None
    fd = os.open(os.path.join(directory, "claims.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                states = {s.gpu: claim_states(directory, s.gpu) for s in slots}
                free = [s for s in slots if free_to_claim(states[s.gpu]) and s not in mine]
                if free and _older_waiters(directory, t0, {s.gpu for s in free}) < len(free):
                    slot = min(free, key=lambda s: (len(states[s.gpu]), slots.index(s)))
                    _hold_file(directory, os.path.basename(claim_path(directory, slot.gpu)))
                    return replace(slot, claim_wait_s=round(time.time() - t0, 3))
                if waiting is None:   # in the queue from its first look on
                    waiting = _hold_file(directory, f"wait.{os.getpid()}",
                                         f"{t0!r} {','.join(s.gpu for s in slots)}")
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            time.sleep(poll_s)
    finally:
        os.close(fd)
        if waiting:
            _drop(waiting)


def claim_path(directory: str, gpu: str) -> str:
    """This process's claim file on the GPU."""
    return os.path.join(directory, f"gpu{gpu}.claim.{os.getpid()}")


def mark_measuring(gpu: str, directory: str | None = None) -> None:
    """Say in this process's claim that it measures now (its build and check are done):
    one new process may then claim the GPU and start up beside it. Not under Nsight
    Compute (COUNTERS_ENV): it replays the measured range kernel by kernel, for minutes,
    and a process that claimed its GPU would wait that long."""
    fd = _HELD.get(claim_path(directory or lock_dir(), gpu))
    if fd is not None and not os.environ.get(COUNTERS_ENV):
        os.pwrite(fd, MEASURING.encode(), 0)   # the file holds "" until now


def release_claim(slot: Slot, directory: str | None = None) -> None:
    _drop(claim_path(directory or lock_dir(), slot.gpu))


def pin_process(cpus) -> None:
    """Move every thread of this process to these cores (sched_setaffinity on one thread
    moves only that thread; threads started later inherit from the thread that starts them)."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return
    tids = os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ["0"]
    for tid in tids:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(tid), set(cpus))


def build_cpus(info: dict | None, all_slots: list[Slot] = ()) -> list[int] | None:
    """The cores a lock holder builds and checks on (a cold compile: Inductor's threads and
    their compilers, seconds to minutes): its slot's (info, from hold) and the shared ones
    it started on, never another GPU's slot (all_slots). It measures (warm-up on) on its
    slot's cores alone. None without a pinned slot."""
    if not info or not info.get("cpus") or not info.get("shared_cpus"):
        return None
    taken = {c for s in all_slots for c in s.cpus}
    return sorted(set(info["cpus"]) | (set(info["shared_cpus"]) - taken))


@contextlib.contextmanager
def hold(slot: Slot, directory: str | None = None):
    """Hold the slot's GPU lock (waiting for it), on the slot's cores. Yields a dict with
    wait_s, shared_cpus (the cores the process had before: see build_cpus) and held_unix
    = [start, end] (for the overlap check): end is None while held, so that a process
    stopped at its time limit can record its span up to then."""
    directory = directory or lock_dir()
    info = {"gpu": slot.gpu, "cpus": list(slot.cpus) or None, "claim_wait_s": slot.claim_wait_s}
    before = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    info["shared_cpus"] = before if slot.cpus else None
    t0 = time.time()
    fd = os.open(os.path.join(directory, f"gpu{slot.gpu}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        start = time.time()
        info["wait_s"] = round(start - t0, 3)
        info["held_unix"] = [start, None]
        pin_process(slot.cpus)
        try:
            yield info
        finally:
            info["held_unix"] = [start, time.time()]
            fcntl.flock(fd, fcntl.LOCK_UN)
            if slot.cpus and before:
                pin_process(before)
    finally:
        os.close(fd)


COUNTERS_ENV = "FUSIONLAB_COUNTERS_LOCK"   # set (to 1) in the environment of a process under ncu


def take_counters(directory: str | None = None) -> float:
    """Take this host's lock of the GPUs' performance counters (waiting for it) and hold
    it until the process ends: the kernel drops a flock when its process exits, however
    it exits. A process under Nsight Compute takes it before its GPU lock. ncu's
    collection in one process can outlast that process's GPU lock (into its exit); a
    second ncu process collecting then fails ("another process ... is concurrently
    collecting profiling data"). Returns the seconds waited."""
    fd = os.open(os.path.join(directory or lock_dir(), "counters.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    t0 = time.time()
    fcntl.flock(fd, fcntl.LOCK_EX)   # the descriptor is left open: it is the lock
    return round(time.time() - t0, 3)
