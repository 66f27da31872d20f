"""The untraced timing (runner.timing) at its boundaries, with nothing timed for real: a
fake torch and model record what each loop and iteration calls, a fake clock stands for
timing.time (a loop advances it by what it costs), and the host check's meter and blocks
are scripted. Each expected value worked out by hand: the calls of a loop in order, warm-up
chunks ending exactly at the floor, a window's sync inside or outside it, when paired
windows stop (the CI target, the time cap and the window cap, each at equality), blocks
kept or discarded at the cap, and the paired ratio at the host's two states."""
import gc
import math
import types

import pytest

from fusionlab.core import ranges as R
from fusionlab.runner import timing


class Clock:
    """timing.time: perf_counter reads `now`, which loops and syncs advance."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(timing, "time", c)
    return c


class Out:
    """An output tensor of the fake torch: .float() and .mean() logged."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def float(self):
        self.log.append(f"{self.name}.float")
        return Out(self.name + "f", self.log)

    def mean(self):
        self.log.append(f"{self.name}.mean")
        return Loss(f"mean({self.name})", self.log)


class Loss:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def __add__(self, other):
        return Loss(f"{self.name}+{other.name}", self.log)

    def backward(self):
        self.log.append(f"backward {self.name}")


class NoGrad:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("no_grad(")

    def __exit__(self, *exc):
        self.log.append(")")


def fake(log):
    """A torch (Tensor, no_grad), a model whose zero_grad is logged, an optimizer."""
    torch = types.SimpleNamespace(Tensor=Out, no_grad=lambda: NoGrad(log))
    model = types.SimpleNamespace(zero_grad=lambda **k: log.append(f"zero_grad{k}"))
    opt = types.SimpleNamespace(step=lambda: log.append("step"))
    return torch, model, opt


def rng_of(log):
    class Rng:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            log.append(f"[{self.name}")

        def __exit__(self, *exc):
            log.append("]")
    return Rng


# --- the iteration and the loops --------------------------------------------------------

def test_a_training_iteration_as_a_user_writes_it():
    log = []
    torch, model, opt = fake(log)

    def fn(*a):
        log.append(f"fn{a}")
        return Out("y", log)
    timing.train_iteration(torch, fn, (1, 2), model, opt)()
    assert log == ["zero_grad{'set_to_none': True}", "fn(1, 2)", "y.mean", "backward mean(y)", "step"]
    log.clear()
    timing.train_iteration(torch, fn, (1,), model, None, "bfloat16")()     # no optimizer; a float32 loss
    assert log == ["zero_grad{'set_to_none': True}", "fn(1,)", "y.float", "yf.mean", "backward mean(yf)"]


def test_a_training_iteration_of_several_outputs_sums_their_float32_means():
    log = []
    torch, model, opt = fake(log)
    fn = lambda: (Out("a", log), Out("b", log), Out("c", log))     # noqa: E731
    timing.train_iteration(torch, fn, (), model, opt)()
    assert log == ["zero_grad{'set_to_none': True}", "a.float", "af.mean", "b.float", "bf.mean", "c.float",
                   "cf.mean", "backward mean(af)+mean(bf)+mean(cf)", "step"]


def test_the_traced_iteration_opens_the_loop_parts_ranges():
    log = []
    torch, model, opt = fake(log)
    fn = lambda x: log.append("fn") or Out("y", log)                # noqa: E731
    timing.train_iteration(torch, fn, (1,), model, opt, "float16", rng=rng_of(log))()
    assert log == [f"[{R.ZERO_GRAD}", "zero_grad{'set_to_none': True}", "]", "fn", f"[{R.LOSS}", "y.float",
                   "yf.mean", "]", "backward mean(yf)", f"[{R.OPTIMIZER_STEP}", "step", "]"]
    log.clear()
    timing.train_iteration(torch, fn, (1,), model, None, rng=rng_of(log))()
    assert log == [f"[{R.ZERO_GRAD}", "zero_grad{'set_to_none': True}", "]", "fn", f"[{R.LOSS}", "y.mean", "]",
                   "backward mean(y)"]
    # iteration(): the same, in either mode, with nothing around it
    log.clear()
    timing.iteration(torch, "train", fn, (1,), model, opt, "bfloat16", rng_of(log))()
    assert log[:5] == [f"[{R.ZERO_GRAD}", "zero_grad{'set_to_none': True}", "]", "fn", f"[{R.LOSS}"]
    assert log[5:7] == ["y.float", "yf.mean"] and log[-3:] == [f"[{R.OPTIMIZER_STEP}", "step", "]"]
    log.clear()
    timing.iteration(torch, "train", fn, (1,), model, opt)()            # float32 by default: its mean directly
    assert log == ["zero_grad{'set_to_none': True}", "fn", "y.mean", "backward mean(y)", "step"]
    log.clear()
    assert timing.iteration(torch, "inference", lambda a, b: (a, b), (1, 2), model, opt)() == (1, 2)
    assert log == []


def test_loop_sources_point_at_the_marked_lines():
    src = timing.loop_sources()
    assert set(src) == set(R.LOOP)
    lines = open(timing.__file__).read().splitlines()
    const = {R.ZERO_GRAD: "ZERO_GRAD", R.LOSS: "LOSS", R.OPTIMIZER_STEP: "OPTIMIZER_STEP"}
    for part, where in src.items():
        path, line = where.rsplit(":", 1)
        assert path == timing.__file__
        assert lines[int(line) - 1].strip().startswith(f"with rng(R.{const[part]}):")
        assert lines[int(line) - 1].endswith(f"# loop: {part}")


def test_grad_mode_and_the_loops():
    log = []
    torch, model, opt = fake(log)
    assert isinstance(timing.grad_mode(torch, "train"), type(timing.contextlib.nullcontext()))
    assert isinstance(timing.grad_mode(torch, "inference"), NoGrad)
    # inference, one input: one no_grad around n direct calls
    timing.make_loop(torch, "inference", lambda x: log.append(f"fn({x})"), (7,))(3)
    assert log == ["no_grad(", "fn(7)", "fn(7)", "fn(7)", ")"]
    log.clear()
    timing.make_loop(torch, "inference", lambda *a: log.append(f"fn{a}"), (7, 8))(2)
    assert log == ["no_grad(", "fn(7, 8)", "fn(7, 8)", ")"]
    log.clear()
    timing.make_loop(torch, "inference", lambda x: log.append("fn"), (7,))(0)
    assert log == ["no_grad(", ")"]
    log.clear()
    # train: no no_grad, n whole iterations, in the dtype asked
    timing.make_loop(torch, "train", lambda x: Out("y", log), (7,), model, opt, "bfloat16")(2)
    assert log == ["zero_grad{'set_to_none': True}", "y.float", "yf.mean", "backward mean(yf)", "step"] * 2
    log.clear()
    timing.make_loop(torch, "train", lambda x: Out("y", log), (7,), model)(1)      # float32 by default
    assert log == ["zero_grad{'set_to_none': True}", "y.mean", "backward mean(y)"]
    log.clear()
    timing.per_iteration(lambda: log.append("s"))(3)
    assert log == ["s"] * 3


# --- warm-up and the window -------------------------------------------------------------

def _stepper(clock, cost, calls):
    def loop(n):
        for _ in range(n):
            calls.append(clock.now)
            clock.now += cost
    return loop


def test_warm_up_ends_exactly_at_its_floor(clock):
    calls, syncs = [], []
    loop = _stepper(clock, 1 / 64, calls)
    # 1, then 9 more: 9 / 64 s after the first, not short of a floor of 9 / 64
    assert timing.warm_up(loop, lambda: syncs.append(len(calls)), 10, 9 / 64) == 10
    assert syncs == [1, 10, 10]
    calls.clear()
    syncs.clear()
    # a floor just past it: one more chunk of 10
    assert timing.warm_up(loop, lambda: syncs.append(len(calls)), 10, 9 / 64 + 1e-9) == 20
    assert syncs == [1, 10, 20, 20]
    calls.clear()
    syncs.clear()
    # no floor: the first iteration, then the rest of the iterations
    assert timing.warm_up(loop, lambda: syncs.append(len(calls)), 5, 0.0) == 5 and syncs == [1, 5, 5]
    calls.clear()
    syncs.clear()
    # a floor alone: chunks of one iteration until 3 / 64 s after the first
    assert timing.warm_up(loop, lambda: syncs.append(len(calls)), 0, 3 / 64) == 4 and syncs == [1, 2, 3, 4, 4]
    calls.clear()
    syncs.clear()
    assert timing.warm_up(loop, lambda: syncs.append(len(calls)), 1, 0.0) == 1 and syncs == [1, 1]
    calls.clear()
    syncs.clear()
    assert timing.warm_up(loop, lambda: syncs.append(len(calls)), 0, 0.0) == 0 and syncs == [0] and calls == []


def test_a_window_holds_the_loop_and_its_last_sync_only(clock):
    events = []

    def loop(n):
        events.append(f"loop({n})")
        clock.now += n / 64

    def sync():
        events.append("sync")
        clock.now += 1 / 8
    # (4 / 64 + 1 / 8) s over 4 iterations: 46.875 ms each
    assert timing.window(loop, sync, 4) == 46.875
    assert events == ["sync", "loop(4)", "sync"]


def test_time_windows_sync_around_each_window_and_probe_between(clock):
    events, probe_ms = [], []

    def step():
        events.append("step")
        clock.now += 1 / 64
    out = timing.time_windows(timing.per_iteration(step), lambda: events.append("sync"), 2, 3,
                              lambda: events.append("probe") or 0.5, probe_ms)
    assert out == [15.625, 15.625] and probe_ms == [0.5, 0.5, 0.5]
    assert events == ["probe"] + (["sync"] + ["step"] * 3 + ["sync", "probe"]) * 2


def test_gc_paused_collects_then_pauses_until_the_block_ends(monkeypatch):
    collected = []
    monkeypatch.setattr(gc, "collect", lambda *a: collected.append(gc.isenabled()))
    assert gc.isenabled()
    with timing.gc_paused():
        assert not gc.isenabled() and collected == [True]
    assert gc.isenabled()
    with pytest.raises(KeyError):
        with timing.gc_paused():
            raise KeyError("x")
    assert gc.isenabled() and collected == [True, True]


def test_the_harness_cost_of_one_window_and_of_two(clock):
    costs = iter([1.0] + [1 / 64] * 4 + [1.0] + [1 / 64] * 4 + [3 / 64] * 4)   # first call, then windows

    def loop_of(f):
        def loop(n):
            for _ in range(n):
                clock.now += next(costs)
                f(None)
        return loop
    # windows=0 still times one window: 1 / 64 s per iteration, in microseconds
    assert timing.harness_cost(loop_of, lambda: None, 4, windows=0) == 15625.0
    # two windows: the median is their mean, (1 + 3) / 2 / 64 s
    assert timing.harness_cost(loop_of, lambda: None, 4, windows=2) == 31250.0


# --- when paired windows stop -----------------------------------------------------------

def test_until_at_each_of_its_limits(monkeypatch):
    half = {"v": None}
    monkeypatch.setattr(timing, "ci_half_width", lambda out, eager: half["v"])
    u = timing.Until()
    assert u.done([1.0], [1.0], 0.0) is True and u.reason == "fixed"
    u = timing.Until(ci=0.02, max_s=10.0, max_windows=5)
    half["v"] = 0.02                                             # exactly the target: met
    assert u.done([1.0] * 2, [1.0] * 2, 0.0) is True and u.reason == "ci"
    half["v"] = 0.0200001
    u = timing.Until(ci=0.02, max_s=10.0, max_windows=5)
    assert u.done([1.0] * 4, [1.0] * 4, 9.99) is False and u.reason == "fixed"
    assert u.done([1.0] * 4, [1.0] * 4, 10.0) is True and u.reason == "time_cap"
    u = timing.Until(ci=0.02, max_s=10.0, max_windows=5)
    assert u.done([1.0] * 5, [1.0] * 5, 0.0) is True and u.reason == "max_windows"
    # the CI first, then the time cap, then the window cap
    u = timing.Until(ci=0.02, max_s=10.0, max_windows=5)
    half["v"] = 0.01
    assert u.done([1.0] * 9, [1.0] * 9, 99.0) is True and u.reason == "ci"
    half["v"] = None                                            # fewer than 2 pairs: no CI yet
    u = timing.Until(ci=0.02, max_s=10.0, max_windows=5)
    assert u.done([1.0] * 9, [1.0] * 9, 99.0) is True and u.reason == "time_cap"
    # no caps (0): only the CI stops it
    u = timing.Until(ci=0.02)
    assert u.done([1.0] * 1000, [1.0] * 1000, 1e9) is False


def test_until_with_a_real_ci():
    u = timing.Until(ci=1e-12, max_s=0.0, max_windows=0)
    assert u.done([1.0, 1.0], [2.0, 2.0], 5.0) is True and u.reason == "ci"      # identical pairs: zero width
    u = timing.Until(ci=0.5, max_s=0.0, max_windows=0)
    assert u.done([1.0], [2.0], 5.0) is False


class Windows:
    """timing.window replaced: the windows' times 1, 2, 3, ... in the order they are timed."""

    def __init__(self, monkeypatch):
        self.n = 0
        self.loops = []
        monkeypatch.setattr(timing, "window", self)

    def __call__(self, loop, sync, iters):
        self.n += 1
        self.loops.append((loop, iters))
        return float(self.n)


def test_paired_windows_order_and_probes(monkeypatch):
    w = Windows(monkeypatch)
    probes = iter(range(100, 200))
    probe_ms = []
    v, e = (lambda n: None), (lambda n: None)
    out, eager = timing.time_paired_windows(v, e, None, 3, 7, lambda: next(probes), probe_ms)
    # variant-eager, eager-variant, variant-eager; a probe before and after each variant window
    assert (out, eager, probe_ms) == ([1.0, 4.0, 5.0], [2.0, 3.0, 6.0], [100, 101, 102, 103])
    assert [lp for lp, _ in w.loops] == [v, e, e, v, v, e] and {i for _, i in w.loops} == {7}
    # time_windows: the variant alone, no probe
    assert timing.time_windows(v, None, 2, 3) == [7.0, 8.0] and w.loops[-1] == (v, 3)
    # without eager, an Until is not consulted: exactly `windows`
    u = timing.Until(ci=1e-12, max_windows=50)
    out, eager = timing.time_paired_windows(v, None, None, 2, 1, until=u)
    assert (out, eager, u.reason) == ([9.0, 10.0], [], "fixed")


def test_paired_windows_run_with_the_collector_paused(monkeypatch):
    states = []
    monkeypatch.setattr(timing, "window", lambda loop, sync, iters: states.append(gc.isenabled()) or 1.0)
    timing.time_paired_windows(None, None, None, 2, 1)
    assert states == [False, False] and gc.isenabled()


def test_paired_windows_added_until_the_window_cap(monkeypatch):
    Windows(monkeypatch)                       # ratios 2, 0.75, 1.2, ...: never a narrow CI
    u = timing.Until(ci=1e-6, max_windows=4)
    out, eager = timing.time_paired_windows(lambda n: None, lambda n: None, None, 2, 1, until=u)
    assert (out, eager, u.reason) == ([1.0, 4.0, 5.0, 8.0], [2.0, 3.0, 6.0, 7.0], "max_windows")


class Check:
    """A HostCheck scripted: judge's answers in turn, its calls recorded."""

    def __init__(self, answers):
        self.answers, self.calls, self.opened = list(answers), [], 0

    def open(self):
        self.opened += 1

    def judge(self, pairs, final=False):
        self.calls.append((pairs, final))
        return self.answers.pop(0)


def test_paired_windows_keep_or_discard_whole_blocks(monkeypatch):
    Windows(monkeypatch)
    probes = iter(range(100, 200))
    probe_ms = []
    check = Check([None, False, True, True])
    out, eager = timing.time_paired_windows(lambda n: None, lambda n: None, None, 2, 1, lambda: next(probes),
                                            probe_ms, check=check)
    # pairs 1 and 2 one block (the first judged too short), discarded at the windows asked for
    # (final); pair 3 kept before they are reached, pair 4 judged final and kept
    assert check.calls == [(1, False), (2, True), (1, False), (1, True)] and check.opened == 4
    assert (out, eager, probe_ms) == ([5.0, 8.0], [6.0, 7.0], [100, 103, 104])
    # without eager: the kept variant windows alone
    Windows(monkeypatch)
    check = Check([True, None, True])
    assert timing.time_windows(lambda n: None, None, 3, 1, check=check) == [1.0, 2.0, 3.0]
    assert check.calls == [(1, False), (1, False), (2, True)]


# --- the host check ---------------------------------------------------------------------

class Meter:
    hz = 3

    def __init__(self, cores):
        self.values, self.started = list(cores), 0

    def start(self):
        self.started += 1

    def cores(self):
        return self.values.pop(0)


class Gate:
    def __init__(self, others):
        self.others, self.refreshed, self.info = others, 0, {"roots": 1}

    def other_measurers(self):
        return self.others

    def refresh(self):
        self.refreshed += 1


def test_host_check_threshold_and_its_tick_allowance(clock):
    assert timing.HostCheck(Meter([]), None).threshold() == 1.0
    assert timing.HostCheck(Meter([]), Gate(2)).threshold() == 4.0       # 1 + 1.5 x 2 others
    # a block of 1 s: 3 ticks / (3 Hz x 1 s) = 1 core allowed over the threshold 1: 2.0
    check = timing.HostCheck(Meter([2.0, 2.0001, None]), None, windows=4)
    for cores, kept, disturbed in ((2.0, True, False), (2.0001, False, True), (None, True, False)):
        check.open()
        clock.now += 1.0
        assert check.judge(1) is kept
        b = check.blocks[-1]
        assert (b["disturbed"], b["kept"], b["threshold_cores"], b["seconds"]) == (disturbed, kept, 2.0, 1.0)
        assert b["other_busy_cores"] == (None if cores is None else round(cores, 3))


def test_host_check_rounds_what_it_records(clock):
    check = timing.HostCheck(Meter([1.23456]), None, windows=1)
    check.open()
    clock.now = 0.70001234
    # 1 + 3 / (3 x 0.70001234) = 2.428546: 2.43 to 2 places; the span to 4, the cores to 3
    assert check.judge(1) is True
    b = check.blocks[0]
    assert (b["threshold_cores"], b["seconds"], b["other_busy_cores"]) == (2.43, 0.7, 1.235)


def test_host_check_blocks_shorter_than_block_s(clock):
    check = timing.HostCheck(Meter([0.0, 0.0]), None, windows=1)
    check.open()
    clock.now = 0.0625
    check.open()                                    # open again: the block's start and meter kept
    assert check.meter.started == 1
    clock.now = 0.0999999                           # short of BLOCK_S (0.1 s): not judged yet
    assert check.judge(1) is None and check.blocks == []
    clock.now = 0.1                                 # exactly BLOCK_S: judged
    assert check.judge(2) is True and check.blocks[0]["pairs"] == 2
    assert check._t0 is None
    # a final block of no time at all: 3 ticks over 1 ms at the least
    check.open()
    assert check.judge(1, final=True) is True and check.blocks[1]["threshold_cores"] == 1001.0
    assert check.blocks[1]["seconds"] == 0.0


def test_host_check_discards_up_to_its_cap_and_keeps_the_rest(clock):
    gate = Gate(0)
    check = timing.HostCheck(Meter([9.0] * 5), gate, windows=2)     # at most 2 x 2 pairs discarded
    kept = []
    for pairs in (1, 3, 1, 1):
        check.open()
        clock.now += 1.0
        kept.append(check.judge(pairs))
    # 1 discarded, then 1 + 3 = 4 (the cap, not past it) discarded, then 5 > 4: kept, flagged
    assert kept == [False, False, True, True] and gate.refreshed == 4
    rec = check.record()
    assert (rec["blocks"], rec["disturbed_blocks"], rec["pairs_discarded"], rec["disturbed_pairs_kept"]) == (4, 4, 4, 2)
    assert rec["other_busy_cores_max"] == 9.0 and rec["other_busy_cores_median"] == 9.0
    assert rec["gate"] == {"roots": 1} and rec["gate"] is not gate.info and rec["block_states"] == check.blocks
    # windows=0 counts as one: 2 pairs at most; without retime none at all
    check = timing.HostCheck(Meter([9.0] * 3), None, windows=0)
    out = []
    for pairs in (2, 1):
        check.open()
        clock.now += 1.0
        out.append(check.judge(pairs))
    assert out == [False, True]
    check = timing.HostCheck(Meter([9.0]), None, windows=5, retime=False)
    check.open()
    clock.now += 1.0
    assert check.judge(1) is True and check.record()["disturbed_pairs_kept"] == 1


def test_host_check_record_of_quiet_and_unread_blocks(clock):
    check = timing.HostCheck(Meter([None, 0.5, 0.25, 1.0]), None, windows=4)
    for _ in range(4):
        check.open()
        clock.now += 1.0
        check.judge(1)
    rec = check.record()
    assert rec["other_busy_cores_max"] == 1.0 and rec["other_busy_cores_median"] == 0.5
    assert rec["disturbed_blocks"] == 0 and rec["pairs_discarded"] == 0 and rec["gate"] is None
    empty = timing.HostCheck(Meter([]), None).record()
    assert empty == {"blocks": 0, "disturbed_blocks": 0, "pairs_discarded": 0, "disturbed_pairs_kept": 0,
                     "other_busy_cores_max": None, "other_busy_cores_median": None, "block_states": [], "gate": None}


# --- the paired ratio, its CI and the host's states ------------------------------------

def test_paired_speedup_and_its_ci_by_hand():
    assert timing.paired_speedup([2.0, None, 0.0, 4.0], [9.0, 6.0]) == 7.5 / 3.0
    assert timing.paired_speedup([0.0], [1.0]) is None and timing.paired_speedup([1.0], [None]) is None
    # log ratios ln 2 and ln 8: mean ln 4, sd sqrt(2) ln 2, half-width 12.706 x ln 2 (t95 at 1 df)
    lo, hi = timing.pair_ratio_ci([1.0, 1.0], [2.0, 8.0])
    assert (lo, hi) == (pytest.approx(4 * 2 ** -12.706), pytest.approx(4 * 2 ** 12.706))
    assert timing.ci_half_width([1.0, 1.0], [2.0, 8.0]) == pytest.approx(2 ** 12.706 - 1)
    # a pair with a missing window dropped: one pair left, no CI
    assert timing.pair_ratio_ci([1.0, 0.0], [2.0, 8.0]) is None
    assert timing.pair_ratio_ci([1.0, 1.0], [2.0, None]) is None
    assert timing.ci_half_width([1.0, 1.0], [3.0, 3.0]) == 0.0


def test_pair_probes_by_hand():
    assert timing.pair_probes([1.0, 3.0, 5.0], 3) == [2.0, 4.0, None]
    assert timing.pair_probes([0.0, 2.0, 4.0], 2) == [None, 3.0]
    assert timing.pair_probes([2.0, 4.0], 1) == [3.0] and timing.pair_probes([], 1) == [None]


def test_host_states_at_the_fast_state_cut():
    # pair probes 1, 1.1 and 1.2: the cut 1 x 1.2; 1.2 itself fast; 1.3 slow
    v, e = [1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.2]
    s = timing.host_states(v, e, [1.0, 1.0, 1.2, 1.2, 1.4])
    assert s["host_state_pairs"] == {"fast": 3, "slow": 1}
    assert s["paired_speedup_fast_host"] == 2.0 and s["paired_speedup_slow_host"] == 2.2
    assert s["paired_host_sensitive"] is True                       # 2 / 2.2: 10% the other way
    # a pair without a probe is in neither state
    s = timing.host_states([1.0, 1.0, 1.0], [2.0, 2.0, 3.0], [1.0, 1.0, None, 2.0])
    assert s["host_state_pairs"] == {"fast": 1, "slow": 0} and s["paired_speedup_fast_host"] == 2.0
    assert s["paired_speedup_slow_host"] is None and s["paired_host_sensitive"] is False
    # 4% apart: not sensitive; 6% either way: sensitive
    probe = [1.0, 1.0, 2.0]
    assert timing.host_states([1.0, 1.0], [2.0, 2.08], probe)["paired_host_sensitive"] is False
    assert timing.host_states([1.0, 1.0], [2.12, 2.0], probe)["paired_host_sensitive"] is True
    none = {"paired_speedup_fast_host": None, "paired_speedup_slow_host": None, "host_state_pairs": None,
            "paired_host_sensitive": None}
    assert timing.host_states([1.0], [2.0], [None, None]) == none
    assert timing.host_states([1.0], [], [1.0, 1.0]) == none
