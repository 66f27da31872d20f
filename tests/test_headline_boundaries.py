"""The headline's functions (analysis.sweep.headline) at their boundaries, against values
worked out by hand: the paired speedup's t interval over processes and the spread pooled
over the sweep, the ceiling notes word for word, the crossings along a swept axis, the
host-bound fields and host skew, and the measured bytes' range."""
import math

import pandas as pd
import pytest

from fusionlab.analysis.sweep import headline, tables

e = math.exp


def approx(x):
    return pytest.approx(x, rel=1e-12, abs=1e-15)


# --- the spread pooled over the sweep -------------------------------------------------

def test_the_pooled_spread_by_hand():
    """log values (0, 0.2): mean 0.1, squares 0.02, 1 df; (0.1, 0.1, 0.4): mean 0.2,
    squares 0.06, 2 df; one value, and values that are missing, zero or negative, add
    nothing: sd sqrt(0.08 / 3) over 3 df and 2 configurations."""
    groups = [[1.0, e(0.2)], [e(0.1), e(0.1), e(0.4)], [2.0], [float("nan"), -1.0, 0.0, 3.0]]
    sd, df, k = headline.pooled_spread(groups)
    assert (sd, df, k) == (approx(math.sqrt(0.08 / 3)), 3, 2)
    sd, df, k = headline.pooled_spread([[2.0], []])
    assert math.isnan(sd) and (df, k) == (0, 0)
    sd, df, k = headline.pooled_spread([])
    assert math.isnan(sd) and (df, k) == (0, 0)
    # a column pandas left as objects (numbers and None) reads as numbers
    assert headline.pooled_spread([pd.Series([1.0, None, e(0.2)], dtype=object)])[:2] == (approx(math.sqrt(0.02)), 1)


# --- the paired speedup's interval over processes --------------------------------------

TWO = [e(-0.1), e(0.3)]   # log mean 0.1, sd 0.2 sqrt 2: sd / sqrt 2 = 0.2


@pytest.mark.parametrize("pooled, half, name", [
    ((math.nan, 0, 0), 12.706 * 0.2, "95% t over 2 processes"),                     # its own spread, 1 df
    ((0.4 * math.sqrt(2), 10, 2), 2.228 * 0.4,                                      # the pooled one, larger
     "95% t over 2 processes, spread pooled over 2 configurations"),
    ((0.1, 10, 2), 2.228 * 0.2, "95% t over 2 processes, spread pooled over 2 configurations"),  # its own, larger
    ((0.4 * math.sqrt(2), 10, 1), 12.706 * 0.2, "95% t over 2 processes"),         # pooled over itself alone
])
def test_the_t_interval_over_two_processes(pooled, half, name):
    lo, hi, got = headline.process_interval(TWO, pooled)
    assert (lo, hi, got) == (approx(e(0.1 - half)), approx(e(0.1 + half)), name)


def test_one_process_takes_the_pooled_spread_or_has_no_interval():
    """2.0 alone (missing, zero and negative values left out) with a spread of 0.3 pooled
    over 4 df: 2.0 x exp(-+2.776 x 0.3)."""
    lo, hi, name = headline.process_interval([2.0, float("nan"), 0.0, -1.0], (0.3, 4, 1))
    assert (lo, hi) == (approx(2.0 * e(-0.8328)), approx(2.0 * e(0.8328)))
    assert name == "95% t over 1 process, spread pooled over 1 configuration"
    lo, hi, name = headline.process_interval([2.0], (math.nan, 0, 0))
    assert math.isnan(lo) and math.isnan(hi) and name == "1 repeat"
    lo, hi, name = headline.process_interval([0.0, -1.0, float("nan")], (0.3, 4, 1))
    assert math.isnan(lo) and math.isnan(hi) and name == ""
    obj = pd.Series([e(-0.1), None, e(0.3)], dtype=object)   # numbers and None in an object column
    assert headline.process_interval(obj, (math.nan, 0, 0))[:2] == (approx(e(0.1 - 2.5412)), approx(e(2.6412)))


def test_the_t_quantile_at_its_boundaries():
    from fusionlab.core.ratios import t95
    assert (t95(1), t95(1.99), t95(3), t95(9), t95(10), t95(12), t95(14), t95(15)) == (
        12.706, 12.706, 3.182, 2.262, 2.228, 2.179, 2.179, 2.131)
    assert (t95(60), t95(119), t95(120)) == (2.000, 2.000, 1.980)
    assert math.isinf(t95(0.999)) and math.isinf(t95(0)) and t95(1.0) == 12.706


# --- the ceiling notes ------------------------------------------------------------------

MEASURED = ("{:.2f}x the measured copy bandwidth in Nsight Compute's DRAM bytes: the kernels move DRAM data "
            "faster than the copy benchmark, whose rate is below the DRAM peak")
BOTH = ("{:.2f}x the measured copy bandwidth by the model's bytes, {:.2f}x by Nsight Compute's DRAM bytes: the "
        "model counts traffic that stays in L2")
CPU = ("{:.2f}x the measured copy bandwidth: the cost model counts bytes that stay in the CPU's caches between "
       "operators")
L2 = ("{:.2f}x the measured copy bandwidth: its {} MB per iteration fit in L2, so the data stay resident between "
      "kernels and iterations")
REUSE = ("{:.2f}x the measured copy bandwidth: the cost model counts more bytes than the kernels move (reuse in L2 "
         "or registers)")
MATMUL = ("{:.2f}x the measured matmul rate: the {} take a faster path than the measured matmul (another precision "
          "such as TF32, or another kernel)")
NAN = float("nan")


@pytest.mark.parametrize("args, want", [
    ((1.5, NAN, 16e6, 1.5), MEASURED.format(1.5)),
    ((0.5, NAN, 16e6, 1.01), MEASURED.format(1.01)),              # the measured bytes' reason, whatever the model's
    ((1.5, NAN, 16e6, 1.0), BOTH.format(1.5, 1.0)),               # at the ceiling, not above
    ((1.01, NAN, 16e6, 0.4), BOTH.format(1.01, 0.4)),
    ((1.0, NAN, 16e6, 0.4), ""),
    ((0.5, NAN, 16e6, 0.4), ""),
    ((1.5, NAN, 16e6, NAN), L2.format(1.5, "16")),
    ((1.5, NAN, 64e6, NAN), L2.format(1.5, "64")),                # L2_BYTES itself fits
    ((1.5, NAN, 64e6 + 1, NAN), REUSE.format(1.5)),
    ((1.5, NAN, 60.75e6, NAN), L2.format(1.5, "60.8")),          # 3 figures of MB (not of 1,000,001 B)
    ((1.5, NAN, NAN, NAN), REUSE.format(1.5)),
    ((1.01, NAN, 1e9, NAN), REUSE.format(1.01)),
    ((1.0, NAN, 16e6, NAN), ""),
    ((NAN, 1.01, NAN, NAN), MATMUL.format(1.01, "kernels")),
    ((NAN, 1.0, NAN, NAN), ""),
    ((NAN, NAN, NAN, NAN), ""),
    ((1.5, 1.5, 16e6, 1.5), MEASURED.format(1.5) + "; " + MATMUL.format(1.5, "kernels")),
])
def test_the_ceiling_note_word_for_word(args, want):
    assert headline.ceiling_note(*args) == want
    assert headline.ceiling_note(*args, device="cuda") == want


@pytest.mark.parametrize("args, want", [
    ((1.01, NAN, 16e6, NAN), CPU.format(1.01)),
    ((1.0, NAN, 16e6, NAN), ""),
    ((1.5, NAN, 16e6, 0.4), BOTH.format(1.5, 0.4)),              # measured bytes: their reason on a CPU too
    ((NAN, 1.01, NAN, NAN), MATMUL.format(1.01, "operators")),
    ((1.5, 2.5, NAN, NAN), CPU.format(1.5) + "; " + MATMUL.format(2.5, "operators")),
])
def test_the_ceiling_note_of_a_cpu_run(args, want):
    assert headline.ceiling_note(*args, device="cpu") == want


# --- crossings along a swept axis --------------------------------------------------------

def swept(rows, **fixed):
    base = {"model": "m", "mode": "inference", "dtype": "float32", "backend": "nsys", "device": "cuda",
            "size": "default", **fixed}
    return pd.DataFrame([{**base, "variant": v, "batch": b, "speedup": s, "verdict": verdict}
                         for v, b, s, verdict in rows])


def test_crossings_by_hand():
    h = swept([("eager", 8, 1.0, ""), ("eager", 32, 1.0, ""), ("eager", 128, 1.0, ""),
               ("a", 8, 0.8, "slower"), ("a", 32, 1.5, "faster"), ("a", 128, 0.9, "slower"),
               ("b", 8, 0.95, "inconclusive"), ("b", 32, 1.2, "faster"), ("b", 128, 1.3, "faster"),
               ("c", 8, 1.1, "faster"), ("c", 32, 1.2, "faster"), ("c", 128, 1.3, "faster"),
               ("d", 8, 0.5, "slower"), ("d", 32, 0.6, "slower"),
               ("e", 8, 1.2, "faster"), ("e", 32, 1.3, "1 repeat"),
               ("f", 8, 0.99, "slower"), ("f", 32, 1.0, "inconclusive"),
               ("g", 8, 2.0, "faster"), ("g", 32, NAN, ""),   # one value with a speedup: no axis
               ("h", 8, 1.0, "inconclusive"), ("h", 32, 1.2, "faster"),
               ("i", 8, 0.9, "inconclusive"), ("i", 32, 1.1, "1 repeat")])
    c = headline.crossings(h)
    assert list(c.columns) == ["model", "variant", "mode", "dtype", "backend", "device", "axis", "fixed", "values",
                               "speedups", "text"]
    got = c.set_index("variant")
    assert list(got.index) == ["a", "b", "c", "d", "e", "f", "h", "i"]
    assert got.loc["a", "text"] == ("starts to beat eager between batch 8 and 32 (0.80x -> 1.50x); stops to beat "
                                    "eager between batch 32 and 128 (1.50x -> 0.90x)")
    assert got.loc["b", "text"] == ("no decisive crossing between batch 8 and 32 (0.95x -> 1.20x: inconclusive -> "
                                    "faster) (no verdict from the interval at batch 8)")
    assert got.loc["c", "text"] == "beats eager at every swept batch 8 to 128"
    assert got.loc["d", "text"] == "is slower than eager at every swept batch 8 to 32"
    assert got.loc["e", "text"] == ("no verdict crosses 1 at the swept batch 8 to 32 (no verdict from the interval "
                                    "at batch 32)")
    assert got.loc["f", "text"] == ("no decisive crossing between batch 8 and 32 (0.99x -> 1.00x: slower -> "
                                    "inconclusive) (no verdict from the interval at batch 32)")
    assert got.loc["h", "text"] == ("no verdict crosses 1 at the swept batch 8 to 32 (no verdict from the interval "
                                    "at batch 8)")                      # 1.0 itself is not below 1
    assert got.loc["i", "text"] == ("no decisive crossing between batch 8 and 32 (0.90x -> 1.10x: inconclusive -> "
                                    "1 repeat) (no verdict from the interval at batch 8, 32)")
    assert (got.loc["a", "values"], got.loc["a", "speedups"], got.loc["a", "axis"]) == ("8 32 128", "0.80 1.50 0.90",
                                                                                         "batch")
    assert got.loc["a", ["model", "mode", "dtype", "backend", "device", "fixed"]].tolist() == [
        "m", "inference", "float32", "nsys", "cuda", ""]
    none = headline.crossings(h[h["variant"] == "eager"])
    assert none.empty and list(none.columns) == list(c.columns)


def test_crossings_along_a_size_axis_name_it():
    h = swept([("a", 8, 0.8, "slower"), ("a", 8, 1.25, "faster")]).assign(size=["dim512", "dim1024"],
                                                                            dim=[512, 1024])
    c = headline.crossings(h).iloc[0]
    assert (c["axis"], c["fixed"], c["values"]) == ("dim", "batch=8", "512 1024")
    assert c["text"] == "starts to beat eager between dim 512 and 1024 (0.80x -> 1.25x)"


# --- host-bound fields and host skew ------------------------------------------------------

@pytest.mark.parametrize("eager, variant, bound, kernel_speedup", [
    ({"host_ms": 1.5, "wall_ms": 3.0, "kernel_ms": 2.0}, {"host_ms": 0.5, "wall_ms": 1.0, "kernel_ms": 0.5},
     False, 4.0),                                                                   # both exactly half: not over
    ({"host_ms": 1.51, "wall_ms": 3.0, "kernel_ms": 2.0}, {"host_ms": 0.1, "wall_ms": 1.0, "kernel_ms": 0.5},
     True, 4.0),                                                                    # eager's over half
    ({"host_ms": 0.1, "wall_ms": 3.0, "kernel_ms": 2.0}, {"host_ms": 0.51, "wall_ms": 1.0, "kernel_ms": 0.5},
     True, 4.0),                                                                    # the variant's over half
    ({"host_ms": NAN, "wall_ms": 3.0, "kernel_ms": 2.0}, {"host_ms": 0.9, "wall_ms": 1.0, "kernel_ms": 0.0},
     True, None),                                                                   # no kernel time: no ratio
    ({"host_ms": 2.0, "wall_ms": 0.0, "kernel_ms": NAN}, {"host_ms": 0.1, "wall_ms": 1.0, "kernel_ms": 0.5},
     False, None),                                                                  # no wall time: no share
    ({"host_ms": NAN, "wall_ms": 3.0, "kernel_ms": 2.0}, {"wall_ms": 1.0, "kernel_ms": NAN}, None, None),
])
def test_host_bound_and_the_kernel_time_speedup(eager, variant, bound, kernel_speedup):
    got = headline.host_bound_fields(eager, variant)
    assert got["host_bound"] is bound and headline.HOST_BOUND_SHARE == 0.5
    assert math.isnan(got["kernel_speedup"]) if kernel_speedup is None else got["kernel_speedup"] == kernel_speedup


@pytest.mark.parametrize("estimator, slowdown, eager, variant, skewed", [
    ("paired", 1.31, "host", "gpu", True),
    ("paired", 1.31, "gpu", "host", True),
    ("paired", 1.3, "host", "gpu", False),               # tables.HOST_SLOW itself: not slow
    ("paired", 1.31, "gpu", "gpu", False),
    ("paired", 1.31, "host", "host", False),
    ("paired", None, "host", "gpu", False),
    ("paired", NAN, "host", "gpu", False),
    ("paired", 1.31, "host", None, False),
    ("paired", 1.31, None, "host", False),
    ("across processes", 1.31, "host", "gpu", False),
])
def test_host_skew_at_the_slow_host_threshold(estimator, slowdown, eager, variant, skewed):
    assert tables.HOST_SLOW == 1.3
    assert headline.host_skew(estimator, slowdown, eager, variant) is skewed


# --- the measured bytes' range ------------------------------------------------------------

def test_a_range_of_bytes_removed_without_bytes_used_has_no_time():
    row = {"traffic_source": "measured", "traffic_ms": 0.0, "traffic_bytes": 0.0, "traffic_note": ""}
    got = headline.traffic_spread({"bytes_removed_low": 1e6, "bytes_removed_high": 2e6}, row)
    assert (got["traffic_bytes_low"], got["traffic_bytes_high"]) == (1e6, 2e6)
    assert math.isnan(got["traffic_ms_low"]) and math.isnan(got["traffic_ms_high"]) and "traffic_note" not in got
    both = headline.traffic_spread({"bytes_removed_low": 1e6, "bytes_removed_high": 3e6},
                                   {**row, "traffic_ms": 2.0, "traffic_bytes": 2e6})
    assert (both["traffic_ms_low"], both["traffic_ms_high"]) == (1.0, 3.0)


def test_the_range_note_quotes_megabytes_to_three_figures():
    row = {"traffic_source": "measured", "traffic_ms": 1.0, "traffic_bytes": 60.75e6, "traffic_note": ""}
    got = headline.traffic_spread({"bytes_removed_low": 101.5e6, "bytes_removed_high": 401.5e6,
                                   "bytes_regime": "near or below L2"}, row)
    assert got["traffic_note"] == ("the working set is near or below L2: the DRAM bytes removed lie between 102 and "
                                   "402 MB (cold and steady-state iterations), 60.8 MB being the steady median")


# --- the largest part at its bounds --------------------------------------------------------

def test_the_largest_part_at_its_bounds():
    """A total of exactly 1; a part as large as the total, or larger by the slack 1e-9
    of the total (kept); a part of 0 beside one of
    the other sign (none: a zero part is of neither sign); nothing saved or unknown."""
    assert headline.largest({"a": 0.6, "b": 0.4}, 1.0) == ("a", 0.6)
    assert headline.largest({"a": 2.0, "b": 0.0}, 2.0) == ("a", 2.0)
    assert headline.largest({"a": -3.0, "b": 1.0}, -3.0) == ("a", -3.0)
    edge = 2.0 * (1 + 1e-9)                 # at the stated slack itself: kept
    assert headline.largest({"a": edge, "b": 0.0}, 2.0) == ("a", edge)
    for parts, total in (({"a": 0.0, "b": -1.0}, 2.0), ({"a": 2.0000001, "b": 0.0}, 2.0), ({"a": 1.0}, 0.0),
                         ({"a": 1.0}, NAN)):
        name, value = headline.largest(parts, total)
        assert name == "" and math.isnan(value), (parts, total)
