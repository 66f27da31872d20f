"""The host gate (jobs/host_gate.py) and the windows' host check (runner/timing.HostCheck):
a measurer pauses its sweep's other processes and continues them when it leaves or dies;
a block of windows timed while the host was disturbed is discarded and timed again."""
import os
import signal
import subprocess
import sys
import time

import pytest

from fusionlab.jobs import host_gate
from fusionlab.runner import timing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOG = "import time\nwhile True: time.sleep(0.005)"
MEASURER = ("import sys, time; sys.path.insert(0, {root!r}); from fusionlab.jobs import host_gate\n"
            "with host_gate.quiet({d!r}) as g:\n    print('in', flush=True); time.sleep(60)")


def test_heavy_is_the_roots_descendants_less_the_measurers_lineage():
    # pid: (ppid, state, start)
    procs = {1: (0, "S", 0), 10: (1, "S", 1), 11: (10, "S", 2), 12: (11, "R", 3), 13: (12, "S", 4),
             14: (10, "R", 5), 15: (14, "S", 6), 16: (10, "Z", 7), 20: (1, "R", 8)}
    # root 10; measurer 12 (its shell 11 and its worker 13 kept); 14 and its child 15 heavy;
    # 16 a zombie; 20 not under the root
    assert host_gate.heavy(procs, [10], [12]) == {14, 15}
    assert host_gate.heavy(procs, [10], []) == {11, 12, 13, 14, 15}
    assert host_gate.heavy(procs, [], [12]) == set()


def _state(pid):
    return host_gate.processes()[pid][1]


def _wait_state(pid, want, timeout=3.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if _state(pid) in want:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_a_measurer_pauses_the_sweep_and_its_death_continues_it(tmp_path):
    d = str(tmp_path)
    host_gate.register_sweep(d)          # this test process is the sweep root
    hog = subprocess.Popen([sys.executable, "-c", HOG])
    m = subprocess.Popen([sys.executable, "-c", MEASURER.format(root=ROOT, d=d)], stdout=subprocess.PIPE, text=True)
    try:
        assert m.stdout.readline().strip() == "in"
        assert _wait_state(hog.pid, "T"), "the heavy process was not stopped"
        assert host_gate._read_stopped(d)
        m.send_signal(signal.SIGKILL)    # dies inside quiet(): its guard continues the sweep
        m.wait()
        assert _wait_state(hog.pid, "RS"), "the heavy process stayed stopped"
        t0 = time.time()   # the guard continues them, then clears the file
        while host_gate._read_stopped(d) and time.time() - t0 < 3:
            time.sleep(0.02)
        assert host_gate._read_stopped(d) == set()
    finally:
        for p in (m, hog):
            p.kill()
            p.wait()
        host_gate.unregister_sweep(d)


def test_no_sweep_root_pauses_nothing(tmp_path):
    with host_gate.quiet(str(tmp_path)) as g:
        g.refresh()
    assert g.info["roots"] == 0 and g.info["stopped"] == 0


class FakeMeter:
    """Other processes' busy cores, one value per judged block, in order."""
    hz = 100

    def __init__(self, cores):
        self.values = list(cores)

    def start(self):
        pass

    def cores(self):
        return self.values.pop(0)


def _timed(meter_values, windows=4, retime=True, block_s=0.0):
    check = timing.HostCheck(FakeMeter(meter_values), None, windows, retime=retime)
    check.BLOCK_S = block_s
    n = iter(range(1, 100))

    def loop(_):   # each window's time is its index: which were kept shows in the values
        time.sleep(0)
    seq = []

    def fake_window(lp, sync, iters):
        v = float(next(n))
        seq.append(v)
        return v
    orig = timing.window
    timing.window = fake_window
    try:
        out, eager = timing.time_paired_windows(loop, loop, lambda: None, windows, 10, check=check)
    finally:
        timing.window = orig
    return out, eager, check.record()


def test_disturbed_pairs_are_timed_again():
    # 6 pairs judged one at a time; the second and fourth disturbed (over 1 core + tick allowance)
    out, eager, rec = _timed([0.0, 50.0, 0.0, 50.0, 0.0, 0.0])
    assert len(out) == 4 and len(eager) == 4
    # pair k's windows are 2k-1 and 2k (alternating order): pairs 2 and 4 are gone
    assert sorted(out + eager) == [1, 2, 5, 6, 9, 10, 11, 12]
    assert rec["pairs_discarded"] == 2 and rec["disturbed_blocks"] == 2 and rec["disturbed_pairs_kept"] == 0


def test_retimes_stop_at_their_cap_and_the_rest_is_kept_flagged():
    out, _, rec = _timed([50.0] * 20, windows=2)
    assert len(out) == 2
    assert rec["pairs_discarded"] == 4          # MAX_RETIMED_FACTOR x windows
    assert rec["disturbed_pairs_kept"] == 2


def test_without_retime_every_pair_is_kept_and_its_state_recorded():
    out, _, rec = _timed([50.0, 0.0, 50.0, 0.0], retime=False)
    assert len(out) == 4 and rec["pairs_discarded"] == 0 and rec["disturbed_pairs_kept"] == 2


def test_a_quiet_block_within_the_tick_allowance_is_kept():
    # a block of 1 s: threshold 1.0 + 3 ticks / 1 s = 1.03 cores
    check = timing.HostCheck(FakeMeter([1.02, 1.05]), None, 2)
    check._t0 = time.perf_counter() - 1.0
    assert check.judge(1) is True
    check._t0 = time.perf_counter() - 1.0
    assert check.judge(1) is False


def test_bare_loop_oracle_takes_the_sweeps_default_batches():
    """The oracle's configurations resolve `batch_sizes: default` as the sweep does (each
    model's own default batch), never as the letters of "default"."""
    import importlib.util
    import yaml
    spec = importlib.util.spec_from_file_location("bare_loop_processes",
                                                  os.path.join(ROOT, "benchmarks", "bare_loop_processes.py"))
    bare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bare)
    with open(os.path.join(ROOT, "config", "host-gate-real.yaml")) as f:
        config = yaml.safe_load(f)
    import copy
    from fusionlab.experiments import catalog
    cat = catalog.load()
    kept = copy.deepcopy(cat)   # the config's models join the process's catalog: taken out after
    try:
        got = [(c["model"], c["variant"], c["batch"], c["sizes"]) for c in bare.configurations(config)]
    finally:
        cat.clear()
        cat.update(kept)
    assert got == [("bert", "compile", 16, {"seq": 512}), ("bert", "compile_reduce_overhead", 16, {"seq": 512}),
                   ("gpt2", "compile", 8, {"seq": 512}), ("gpt2", "compile_reduce_overhead", 8, {"seq": 512})]
