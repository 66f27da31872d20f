"""GPU slots (jobs.slots) as plain functions: N slots, never two holders of one
slot, a slot freed when its holder fails or is killed, the slot in the runner's command."""
import json
import multiprocessing as mp
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from fusionlab.jobs import slots


def test_plan_gives_each_gpu_its_own_cores_and_keeps_the_rest():
    planned, rest = slots.plan(["0", "1"], list(range(16)))
    assert [s.gpu for s in planned] == ["0", "1"]
    assert planned[0].cpus == (8, 9, 10, 11) and planned[1].cpus == (12, 13, 14, 15)
    assert rest == list(range(8))
    mine = [c for s in planned for c in s.cpus]
    assert len(mine) == len(set(mine)) and not set(mine) & set(rest)


def test_plan_shrinks_then_gives_up_pinning_on_few_cores():
    planned, rest = slots.plan(["0", "1"], list(range(6)))
    assert [s.cpus for s in planned] == [(2, 3), (4, 5)] and rest == [0, 1]
    planned, rest = slots.plan(["0", "1", "2", "3"], [0, 1, 2])
    assert all(s.cpus == () for s in planned) and rest == [0, 1, 2]


def test_slots_round_trip_through_the_runner_argument():
    planned, _ = slots.plan(["0", "3"], list(range(16)))
    text = slots.format_slots(planned)
    assert text == "0=8-11/3=12-15"
    assert slots.parse_slots(text) == planned
    assert slots.parse_cpus("0-2,5,7-8") == [0, 1, 2, 5, 7, 8]
    with pytest.raises(ValueError, match="GPU=CORES"):
        slots.parse_slots("0=1;rm -rf /")


def test_claims_spread_over_the_gpus_and_a_dead_claim_is_dropped(tmp_path):
    d, s = str(tmp_path), [slots.Slot("0", ()), slots.Slot("1", ())]
    first = slots.claim(s, d)
    # this process already claims GPU 0: its next claim goes to GPU 1, and a third has none left
    assert first.gpu == "0" and slots.claim(s, d).gpu == "1"
    with pytest.raises(RuntimeError, match="already claims GPU 0, 1"):
        slots.claim(s, d)
    for slot in s:
        slots.release_claim(slot, d)
    dead = subprocess.Popen([sys.executable, "-c", "pass"]); dead.wait()
    (tmp_path / f"gpu1.claim.{dead.pid}").touch()   # the claim of a process that is gone
    assert slots.claim_states(d, "1") == []
    assert not (tmp_path / f"gpu1.claim.{dead.pid}").exists()


def _claim_in_child(directory, gpus, measuring, ready, done):
    """A process that claims one of `gpus` (marked measuring or not), says which on
    `ready`, and keeps it until `done`."""
    got = slots.claim([slots.Slot(g, ()) for g in gpus], directory, poll_s=0.05)
    if measuring:
        slots.mark_measuring(got.gpu, directory)
    ready.put(got.gpu)
    done.wait(60)


def _claimant(directory, gpus, measuring=False, wait=True):
    ctx = mp.get_context("fork")
    ready, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_claim_in_child, args=(directory, gpus, measuring, ready, done))
    p.start()
    if wait:
        ready.get(timeout=30)
    return p, done, ready


def test_a_claim_never_queues_behind_a_build_and_takes_the_first_gpu_let_go(tmp_path):
    """Both GPUs claimed by processes still building or checking (a compile may take
    twenty minutes): a new claim waits, and takes the GPU whose claimant ends first."""
    d = str(tmp_path)
    (a, a_done, _), (b, b_done, _) = _claimant(d, "0"), _claimant(d, "1")
    try:
        assert slots.claim_states(d, "0") == [""] and slots.claim_states(d, "1") == [""]
        threading.Timer(0.6, b_done.set).start()
        got = slots.claim([slots.Slot("0", ()), slots.Slot("1", ())], d, poll_s=0.05)
        assert got.gpu == "1" and got.claim_wait_s >= 0.5
        assert a.is_alive()
    finally:
        a_done.set(), b_done.set(), a.join(), b.join()
        slots.release_claim(slots.Slot("1", ()), d)


def test_a_gpu_whose_one_claimant_measures_takes_one_more_claim_and_no_third(tmp_path):
    d = str(tmp_path)
    p, done, _ = _claimant(d, "0", measuring=True)
    third = None
    try:
        assert slots.claim_states(d, "0") == [slots.MEASURING]
        got = slots.claim([slots.Slot("0", ())], d, poll_s=0.05)   # beside the measuring one, at once
        assert got.gpu == "0" and got.claim_wait_s < 1
        assert sorted(slots.claim_states(d, "0")) == ["", slots.MEASURING]
        third, third_done, said = _claimant(d, "0", wait=False)
        with pytest.raises(queue.Empty):   # a third process waits
            said.get(timeout=1.0)
        assert [n for n in os.listdir(d) if n.startswith("wait.")] == [f"wait.{third.pid}"]
    finally:
        done.set(), p.join()
        slots.release_claim(slots.Slot("0", ()), d)
    assert said.get(timeout=10) == "0"   # and claims once both have let go
    third_done.set(), third.join()
    assert slots.claim_states(d, "0") == [] and not [n for n in os.listdir(d) if n.startswith("wait.")]


def test_waiting_processes_claim_in_the_order_they_began_to_wait(tmp_path):
    """Three processes wait for one GPU held by a fourth: each later one, started 0.3 s
    after the one before, claims it after the one before it has let go."""
    d = str(tmp_path)
    holder, holder_done, _ = _claimant(d, "0")
    waiters = []
    for _ in range(3):
        waiters.append(_claimant(d, "0", wait=False))
        time.sleep(0.3)
    holder_done.set(), holder.join()
    order = []
    for p, done, said in waiters:   # the oldest claims first; let it go, then the next
        said.get(timeout=10)
        order.append(p.pid)
        done.set(), p.join()
    assert order == [p.pid for p, _, _ in waiters]


def test_a_waiter_for_other_gpus_holds_up_no_claim_on_a_free_gpu(tmp_path):
    """A process of another sweep waiting for GPU 0 (busy) does not hold up a claim of
    GPU 1, which is free."""
    d = str(tmp_path)
    holder, holder_done, _ = _claimant(d, "0")
    other, other_done, _ = _claimant(d, "0", wait=False)
    try:
        time.sleep(0.3)   # the other process is waiting by now
        got = slots.claim([slots.Slot("1", ())], d, poll_s=0.05)
        assert got.gpu == "1" and got.claim_wait_s < 1
    finally:
        holder_done.set(), other_done.set(), holder.join(), other.join()
        slots.release_claim(slots.Slot("1", ()), d)


def test_a_process_under_nsight_compute_keeps_its_gpu_to_itself_while_it_measures(tmp_path, monkeypatch):
    """ncu replays the measured range kernel by kernel (minutes): its claim never says
    measuring, so no process claims its GPU to wait beside it."""
    d = str(tmp_path)
    monkeypatch.setenv(slots.COUNTERS_ENV, "1")
    slots.claim([slots.Slot("0", ())], d)
    slots.mark_measuring("0", d)
    assert slots.claim_states(d, "0") == [""] and not slots.free_to_claim(slots.claim_states(d, "0"))
    monkeypatch.delenv(slots.COUNTERS_ENV)
    slots.mark_measuring("0", d)
    assert slots.claim_states(d, "0") == [slots.MEASURING]
    slots.release_claim(slots.Slot("0", ()), d)


def test_a_killed_claimant_frees_its_gpu(tmp_path):
    """A claim lives as long as its file's lock: a claimant killed at a deadline leaves
    its file, which no one locks, and the next claim removes it."""
    d = str(tmp_path)
    p, _, _ = _claimant(d, "0")
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    assert (tmp_path / f"gpu0.claim.{p.pid}").exists()
    assert slots.claim([slots.Slot("0", ())], d, poll_s=0.05).gpu == "0"
    assert not (tmp_path / f"gpu0.claim.{p.pid}").exists()
    slots.release_claim(slots.Slot("0", ()), d)


def test_a_forked_child_outliving_its_claimant_keeps_no_claim(tmp_path):
    """A child forked by the claimant (a helper process) that outlives it: the claim ends
    with the claimant, not with the child."""
    d = str(tmp_path)
    code = ("import os, sys, time; from fusionlab.jobs import slots; "
            f"slots.claim([slots.Slot('0', ())], {d!r}); "
            "pid = os.fork()\n"
            "if pid == 0: [os.dup2(os.open(os.devnull, os.O_RDWR), f) for f in (1, 2)]; time.sleep(30); os._exit(0)\n"
            "print(pid, flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    child = int(out.stdout.split()[0])
    try:
        os.kill(child, 0)   # the child runs
        assert slots.claim_states(d, "0") == []
    finally:
        os.kill(child, signal.SIGKILL)


def _hold_and_log(directory, log, hold_s):
    with slots.hold(slots.Slot("0", ()), directory) as info:
        with open(log, "a") as f:
            f.write(f"start {time.time()}\n")
        time.sleep(hold_s)
        with open(log, "a") as f:
            f.write(f"end {time.time()}\n")
    assert info["held_unix"][1] >= info["held_unix"][0]


def test_a_held_slot_shows_its_span_open(tmp_path):
    # while held, the span's end is None (a process stopped at its time limit records it
    # up to then: process.timed_out_span); on release it is the release time
    with slots.hold(slots.Slot("0", ()), str(tmp_path)) as info:
        start, end = info["held_unix"]
        assert end is None and start <= time.time()
    assert info["held_unix"][0] == start and info["held_unix"][1] >= start


def _log_lines(target, args, n: int, log) -> list[list[str]]:
    """Run n processes of target(*args) at once, each exiting 0; the lines they logged, split."""
    procs = [mp.Process(target=target, args=args) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    return [line.split() for line in log.read_text().splitlines()]


def test_never_two_holders_of_one_slot(tmp_path):
    log = tmp_path / "log"
    events = [(float(t), kind) for kind, t in _log_lines(_hold_and_log, (str(tmp_path), str(log), 0.2), 4, log)]
    assert [k for _, k in sorted(events)] == ["start", "end"] * 4   # strictly one after another


def _hold_forever(directory):
    with slots.hold(slots.Slot("0", ()), directory):
        time.sleep(600)


def _lock_is_free(directory) -> bool:
    """GPU 0's lock can be taken at once (and is let go again)."""
    import fcntl
    fd = os.open(os.path.join(directory, "gpu0.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_a_killed_holder_frees_its_slot(tmp_path):
    p = mp.Process(target=_hold_forever, args=(str(tmp_path),))
    p.start()
    deadline = time.time() + 60
    while _lock_is_free(str(tmp_path)) and p.is_alive() and time.time() < deadline:
        time.sleep(0.05)
    assert p.is_alive() and not _lock_is_free(str(tmp_path))   # held
    os.kill(p.pid, signal.SIGKILL)
    p.join(10)
    assert _lock_is_free(str(tmp_path))                       # freed by the kill, not by a timeout
    with slots.hold(slots.Slot("0", ()), str(tmp_path)) as info:
        assert info["held_unix"][1] is None


def _fail_while_holding(directory):
    with slots.hold(slots.Slot("0", ()), directory):
        raise RuntimeError("the experiment failed")


def test_a_failed_holder_frees_its_slot(tmp_path):
    p = mp.Process(target=_fail_while_holding, args=(str(tmp_path),))
    p.start(); p.join(30)
    assert p.exitcode != 0
    assert _lock_is_free(str(tmp_path))      # let go when the experiment raised: taken at once
    with slots.hold(slots.Slot("0", ()), str(tmp_path)) as info:
        pass
    assert info["held_unix"][0] <= info["held_unix"][1]


def test_holding_pins_the_process_to_the_slot_cores_and_back(tmp_path):
    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores and sched_setaffinity")
    before = sorted(os.sched_getaffinity(0))
    with slots.hold(slots.Slot("0", (before[-1],)), str(tmp_path)) as info:
        assert sorted(os.sched_getaffinity(0)) == [before[-1]]
        assert info["shared_cpus"] == before
    assert sorted(os.sched_getaffinity(0)) == before


def test_a_holder_builds_on_its_slot_and_the_shared_cores_never_another_slot():
    # the main process kept 0-7 and gave GPU 0 cores 12-15, GPU 1 cores 8-11: GPU 0's
    # holder compiles on 0-7 and 12-15, and measures on 12-15 alone
    info = {"gpu": "0", "cpus": [12, 13, 14, 15], "shared_cpus": list(range(8))}
    assert slots.build_cpus(info) == list(range(8)) + [12, 13, 14, 15]
    # a runner started by hand, unpinned: the shared set is every core; GPU 1's are left out
    everything = {"gpu": "0", "cpus": [12, 13, 14, 15], "shared_cpus": list(range(16))}
    both = slots.parse_slots("0=12-15/1=8-11")
    assert slots.build_cpus(everything, both) == list(range(8)) + [12, 13, 14, 15]
    assert slots.build_cpus({"gpu": "0", "cpus": None, "shared_cpus": None}) is None
    assert slots.build_cpus(None) is None


def test_the_slot_reaches_the_runner_command_and_a_bad_one_is_refused():
    from fusionlab.runner import cli, process
    a = cli.parse_args(["--model", "mlp", "--variant", "eager", "--batch", "8", "--out", "x.json",
                        "--slots", "0=12-15/1=8-11"])
    assert slots.parse_slots(a.slots)[1] == slots.Slot("1", (8, 9, 10, 11))
    with pytest.raises(SystemExit):
        cli.parse_args(["--model", "mlp", "--variant", "eager", "--batch", "8", "--out", "x.json",
                        "--slots", "0=1;true"])
    # a CPU run and a SLURM job claim nothing
    assert process.claim_slot(a, "cpu") is None
    os.environ["SLURM_JOB_ID"] = "1"
    try:
        assert process.claim_slot(a, "cuda") is None
    finally:
        del os.environ["SLURM_JOB_ID"]


def test_gpu_indices_follow_cuda_visible_devices_and_refuse_an_invisible_gpu(monkeypatch):
    from fusionlab.plan import sweep
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert sweep.gpu_indices("auto") == ["2", "3"]
    assert sweep.gpu_indices("3") == ["3"]
    with pytest.raises(sweep.ConfigError, match="config key gpus: '5' .* allowed values: auto, or a list of 2, 3"):
        sweep.gpu_indices("5")


def test_progress_counts_finished_runs_and_estimates_the_rest(tmp_path):
    from fusionlab.plan import progress
    dirs = [str(tmp_path / f"r{i}") for i in range(4)]
    for d in dirs:
        os.makedirs(d)
    progress.write_plan(str(tmp_path), dirs, gpus=1)
    plan_start = progress.status(str(tmp_path))["elapsed_s"]
    assert plan_start >= 0
    assert "0/4 runs (0%)" in progress.line(str(tmp_path)) and "after the first run" in progress.line(str(tmp_path))
    for d in dirs[:2]:
        open(os.path.join(d, "metrics.json"), "w").close()
    import json
    start = json.load(open(tmp_path / "logs" / "sweep_plan.json"))["start_unix"]
    s = progress.status(str(tmp_path), now=start + 60)
    assert (s["done"], s["total"], s["left_s"]) == (2, 4, 60.0)
    assert progress.line(str(tmp_path), now=start + 60).endswith("2/4 runs (50%), 0:01:00 elapsed, about 0:01:00 left")


def test_a_runner_with_slots_claims_a_gpu_and_sets_its_environment(monkeypatch, tmp_path):
    from fusionlab.runner import cli, process
    monkeypatch.setattr(slots, "lock_dir", lambda: str(tmp_path))   # not the host's: a sweep may run there
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    a = cli.parse_args(["--model", "mlp", "--variant", "eager", "--batch", "8", "--out", "x.json",
                        "--device", "cuda", "--slots", "7=1/9=2"])
    slot = process.claim_slot(a, "cuda")
    try:
        assert slot.gpu in ("7", "9") and os.environ["CUDA_VISIBLE_DEVICES"] == slot.gpu
        assert slot.cpus in ((1,), (2,))
    finally:
        slots.release_claim(slot)


def _take_counters_and_log(directory, log, seconds):
    waited = slots.take_counters(directory)
    with open(log, "a") as f:
        f.write(f"start {time.time()} {waited}\n")
    time.sleep(seconds)
    with open(log, "a") as f:
        f.write(f"end {time.time()} 0\n")
    os._exit(0)   # never released by hand: the process's exit drops it


def test_the_counters_lock_is_held_to_the_process_exit(tmp_path):
    log = tmp_path / "log"
    events = sorted((float(t), kind, float(w))
                    for kind, t, w in _log_lines(_take_counters_and_log, (str(tmp_path), str(log), 0.3), 3, log))
    assert [k for _, k, _ in events] == ["start", "end"] * 3
    assert sum(w for _, k, w in events if k == "start") >= 0.3   # the later ones waited


def test_only_a_process_under_ncu_takes_the_counters_lock():
    code = "import json; from fusionlab.runner import process; print(json.dumps(process.take_counters()))"
    env = {k: v for k, v in os.environ.items() if k != slots.COUNTERS_ENV}
    for extra, took in (({}, False), ({slots.COUNTERS_ENV: "1"}, True)):
        out = subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True,
                             check=True, timeout=120).stdout
        waited = json.loads(out.strip().splitlines()[-1])
        assert (waited is not None) == took and (waited is None or waited >= 0)
