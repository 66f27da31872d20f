"""The suite tables (analysis.sweep.suite) at the boundaries a careless change crosses, each
against numbers worked out by hand: a headline of three models with several configurations
each (the interval's ends the exact bootstrap atoms over models, not over configurations,
not arithmetic means), the statuses, estimators and medians the suite row counts, the
bootstrap's quantiles and seed, the kernel-class split (CPU rows, an empty key, the class
order), each kernel's class and precision from its short and full name, the slower-variant
ledger (at most `top` a side, a class on one side only) and write()'s three files and
their record."""
import hashlib
import itertools
import json
import math
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.sweep import headline, suite
from fusionlab.core.kernel_class import CLASSES

CONFIG = {"size": "default", "mode": "inference", "dtype": "float32"}
NAN = np.nan


def rec(model, variant, batch, status="ok", estimator="paired", speedup=NAN, lo=NAN, hi=NAN, verdict="",
        compile_s=NAN, break_even=NAN) -> dict:
    return {"model": model, "variant": variant, "batch": batch, **CONFIG, "status": status, "estimator": estimator,
            "speedup": speedup, "speedup_lo": lo, "speedup_hi": hi, "verdict": verdict, "compile_s": compile_s,
            "break_even_iters": break_even}


def ok(model, variant, batch, s, compile_s, break_even=NAN, estimator="paired", spread=0.1) -> dict:
    lo, hi = s * (1 - spread), s * (1 + spread)
    return rec(model, variant, batch, "ok", estimator, s, lo, hi, headline.verdict(s, lo, hi), compile_s, break_even)


# max-autotune, listed before compile: models a (2 configurations), b (2: one incorrect),
# c (3: one without an eager run, one not run); compile: a, b, c with 2 configurations
# each, per-model geometric means 1.5, 3, 6 (the configurations 1.5 * 0.8 and 1.5 * 1.25 ...)
AUTOTUNE = [
    ok("a", "max-autotune", 8, 2.0, 10.0, 5.0),                        # faster
    ok("a", "max-autotune", 16, 0.5, 20.0, estimator="wall"),          # slower
    rec("b", "max-autotune", 8, "ok", "paired", 0.8, 0.5, 1.1, "inconclusive", 30.0),
    rec("b", "max-autotune", 16, "incorrect", NAN, compile_s=1000.0),
    ok("c", "max-autotune", 8, 4.0, 40.0, 15.0),                       # faster
    rec("c", "max-autotune", 16, "ok", NAN, compile_s=50.0),           # no eager to compare with
    rec("c", "max-autotune", 32, headline.NOT_RUN, NAN),
]
COMPILE = [ok(m, "compile", b, s, c, be) for m, b, s, c, be in [
    ("a", 8, 1.2, 5.0, 2.0), ("a", 16, 1.875, 7.0, 4.0), ("b", 8, 2.0, 9.0, 6.0), ("b", 16, 4.5, 11.0, 8.0),
    ("c", 8, 4.0, 13.0, 10.0), ("c", 16, 9.0, 15.0, 12.0)]]
EAGER = [rec(m, "eager", b, "ok", "reference", 1.0) for m, b in
         [("a", 8), ("a", 16), ("b", 8), ("b", 16), ("c", 8), ("c", 16)]]


@pytest.fixture
def h() -> pd.DataFrame:
    return pd.DataFrame(EAGER + AUTOTUNE + COMPILE)


def test_a_suite_of_three_models_by_hand(h):
    """Every column of both rows worked out by hand, in the headline's order of variants
    (max-autotune first), eager left out."""
    t = suite.suite(h)
    assert t.columns.tolist() == [
        "variant", "mode", "dtype", "n_models", "n_configs", "n_asked", "n_pass", "pass_rate", "n_compared",
        "n_host_skewed", "speedup_source", "geomean_speedup", "geomean_lo", "geomean_hi", "verdict", "min_speedup",
        "max_speedup", "models_faster", "models_slower", "n_not_run", "n_incorrect", "compile_s_median",
        "break_even_iters_median"]
    assert t["variant"].tolist() == ["max-autotune", "compile"]
    mx, comp = t.iloc[0], t.iloc[1]
    # max-autotune: tried a8 a16 b8 b16 c8 c16 (c32 not run), passed all but b16, compared
    # a8 a16 b8 c8 (c16 has no speedup): 2.0 * 0.5 * 0.8 * 4.0 = 3.2
    assert (mx["n_models"], mx["n_configs"], mx["n_asked"], mx["n_pass"], mx["n_compared"]) == (3, 6, 7, 5, 4)
    assert mx["pass_rate"] == 5 / 7
    assert (mx["n_not_run"], mx["n_incorrect"], mx["n_host_skewed"]) == (1, 1, 0)
    assert mx["speedup_source"] == "paired and wall"
    assert mx["geomean_speedup"] == pytest.approx(3.2 ** 0.25, rel=1e-12)
    # the resample bbb (1 in 27 > 2.5%) is the lowest, 0.8; ccc the highest, 4.0
    assert (mx["geomean_lo"], mx["geomean_hi"]) == pytest.approx((0.8, 4.0), rel=1e-12)
    assert mx["verdict"] == "inconclusive"
    assert (mx["min_speedup"], mx["max_speedup"], mx["models_faster"], mx["models_slower"]) == (0.5, 4.0, 2, 1)
    # medians over the compared configurations only (b16's 1000 s and c16's 50 s left out)
    assert (mx["compile_s_median"], mx["break_even_iters_median"]) == (25.0, 10.0)
    # compile: every configuration compared, 1.2 * 1.875 * 2 * 4.5 * 4 * 9 = 3^6
    assert (comp["n_models"], comp["n_configs"], comp["n_asked"], comp["n_pass"], comp["n_compared"]) == \
        (3, 6, 6, 6, 6)
    assert (comp["pass_rate"], comp["n_not_run"], comp["n_incorrect"]) == (1.0, 0, 0)
    assert comp["speedup_source"] == "paired"
    assert comp["geomean_speedup"] == pytest.approx(3.0, rel=1e-12)
    assert (comp["geomean_lo"], comp["geomean_hi"]) == pytest.approx((1.5, 6.0), rel=1e-12)
    assert comp["verdict"] == "faster"
    assert (comp["min_speedup"], comp["max_speedup"], comp["models_faster"], comp["models_slower"]) == \
        (1.2, 9.0, 6, 0)
    assert (comp["compile_s_median"], comp["break_even_iters_median"]) == (10.0, 7.0)
    # a status count is a whole number, 0 where the row has none of it
    assert t["n_incorrect"].tolist() == [1, 0] and t["n_incorrect"].dtype.kind == "i"


def test_the_interval_is_over_models_and_geometric(h):
    """compile's ends are the geometric means of model a's and c's configurations: not
    their arithmetic means (1.5375, 6.5), and not the ends of a bootstrap over the six
    configurations (whose lowest resample, six times 1.2, is 1 in 6^6)."""
    comp = suite.suite(h).iloc[1]
    assert comp["geomean_lo"] == pytest.approx(math.sqrt(1.2 * 1.875), rel=1e-12)
    assert comp["geomean_hi"] == pytest.approx(math.sqrt(4.0 * 9.0), rel=1e-12)
    assert comp["geomean_lo"] != pytest.approx((1.2 + 1.875) / 2, rel=1e-3)
    assert comp["geomean_hi"] != pytest.approx((4.0 + 9.0) / 2, rel=1e-3)
    rng = np.random.default_rng(1)
    logs = np.log([1.2, 1.875, 2.0, 4.5, 4.0, 9.0])
    over_configs = np.exp(np.quantile([logs[rng.integers(0, 6, 6)].mean() for _ in range(4000)], [0.025, 0.975]))
    assert over_configs[0] > 1.05 * comp["geomean_lo"] and over_configs[1] < 0.95 * comp["geomean_hi"]


def test_estimators_and_medians_where_the_columns_are_missing(h):
    """A headline without estimator, compile_s or break_even_iters: the source is "none",
    the medians nan."""
    t = suite.suite(h.drop(columns=["estimator", "compile_s", "break_even_iters"]))
    assert t["speedup_source"].tolist() == ["none", "none"]
    assert t["compile_s_median"].isna().all() and t["break_even_iters_median"].isna().all()
    assert t["geomean_speedup"].iloc[1] == pytest.approx(3.0, rel=1e-12)


def test_a_variant_with_nothing_compared_says_none(h):
    h = h.copy()
    h.loc[h["variant"] == "compile", ["speedup", "speedup_lo", "speedup_hi"]] = NAN
    row = suite.suite(h).iloc[1]
    assert (row["speedup_source"], row["n_compared"], row["n_pass"], row["verdict"]) == ("none", 0, 6, "no interval")
    assert np.isnan([row["geomean_speedup"], row["geomean_lo"], row["min_speedup"], row["max_speedup"],
                     row["compile_s_median"], row["break_even_iters_median"]]).all()


def test_a_compile_time_that_is_not_a_number_is_left_out_of_the_median(h):
    h = h.astype({"compile_s": object})
    h.loc[(h["variant"] == "compile") & (h["model"] == "c") & (h["batch"] == 16), "compile_s"] = "n/a"
    assert suite.suite(h).iloc[1]["compile_s_median"] == 9.0     # 5, 7, 9, 11, 13


def test_a_speedup_of_zero_is_not_compared(h):
    """A configuration that passed with a speedup of 0 (no time to compare with): passed,
    not compared, not in the mean (its log would make the mean 0)."""
    h = h.copy()
    h.loc[(h["variant"] == "compile") & (h["model"] == "c") & (h["batch"] == 16),
          ["speedup", "speedup_lo", "speedup_hi"]] = 0.0
    row = suite.suite(h).iloc[1]
    assert (row["n_pass"], row["n_compared"], row["min_speedup"], row["max_speedup"]) == (6, 5, 1.2, 4.5)
    assert row["geomean_speedup"] == pytest.approx((1.2 * 1.875 * 2.0 * 4.5 * 4.0) ** 0.2, rel=1e-12)


# --- the bootstrap itself ---

def test_the_interval_ends_are_the_levels_quantiles():
    """Three models of one configuration each, speedups 1, 2, 1000: a resample's mean log
    is fixed by how many times it draws each, and 1000 outweighs any number of 2s, so the
    27 equally likely resamples in order are aaa (1), aab (3), abb (3), bbb (1), aac (3),
    abc (6), bbc (3), acc (3), bcc (3), ccc (1). At level 0.6 the 20% quantile lies in abb
    (14.8% to 25.9%): 2^(2/3); the 80% in acc (74.1% to 85.2%): 1000^(2/3) = 100. 20000
    draws put each empirical quantile well inside its atom."""
    values = pd.Series([1.0, 2.0, 1000.0])
    groups = pd.Series(["a", "b", "c"])
    drawn = Counter("".join(sorted(p)) for p in itertools.product("abc", repeat=3))
    log = {"a": 0.0, "b": math.log(2), "c": math.log(1000)}
    atoms = sorted(drawn, key=lambda p: sum(log[m] for m in p))
    assert atoms == ["aaa", "aab", "abb", "bbb", "aac", "abc", "bbc", "acc", "bcc", "ccc"]
    cdf = np.cumsum([drawn[p] for p in atoms]) / 27
    for q, atom in ((0.2, "abb"), (0.8, "acc")):
        i = atoms.index(atom)
        assert cdf[i - 1] + 0.05 < q < cdf[i] - 0.05
    gm, lo, hi = suite.geomean_ci(values, groups, n=20000, level=0.6)
    assert gm == pytest.approx(2000 ** (1 / 3), rel=1e-12)
    assert (lo, hi) == pytest.approx((2 ** (2 / 3), 100.0), rel=1e-12)


def test_the_interval_is_the_same_each_time_and_follows_the_seed():
    values = pd.Series([0.8, 0.9, 1.1, 1.3, 1.7, 1.6, 2.4, 2.6, 3.1, 0.7])
    groups = pd.Series(list("aabbccddee"))
    first = suite.geomean_ci(values, groups)
    assert suite.geomean_ci(values, groups) == first == suite.geomean_ci(values, groups, seed=0)
    assert suite.geomean_ci(values, groups, seed=1)[1:] != first[1:]


def test_the_geometric_mean_of_numbers_held_as_objects():
    """A column of numbers held as Python objects (a table built from records) reads as
    numbers: two models, 1 and 4."""
    assert suite.geomean_ci(pd.Series([1, 4], dtype=object), pd.Series(["a", "b"])) == \
        pytest.approx((2.0, 1.0, 4.0), rel=1e-12)


def test_no_values_no_mean_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gm, lo, hi = suite.geomean_ci(pd.Series([], dtype=float), pd.Series([], dtype=object))
    assert np.isnan([gm, lo, hi]).all()


# --- kernel classes ---

def kernel(name, t, calls=1, repeat=0, batch=8, size="default", variant="eager", device="cuda", full_name=NAN,
           model="m") -> dict:
    return {"model": model, "variant": variant, "batch": batch, "size": size, "mode": "inference",
            "dtype": "float32", "repeat": repeat, "device": device, "name": name, "full_name": full_name,
            "calls_per_iter": calls, "time_per_iter_us": t}


GEMM, EW, EW2, RED = "sm90_xmma_gemm_f32f32", "vectorized_elementwise_kernel", "elementwise_kernel", "reduce_kernel"
KERNELS = [
    # batch 8, three repeats: matmul 10, 14, 12; elementwise 3+1, 5+1, 4+2 (calls 3, 3, 4); reduction 2, 2, 4
    kernel(GEMM, 10, repeat=0), kernel(EW, 3, 2, repeat=0), kernel(EW2, 1, 1, repeat=0), kernel(RED, 2, repeat=0),
    kernel(GEMM, 14, repeat=1), kernel(EW, 5, 2, repeat=1), kernel(EW2, 1, 1, repeat=1), kernel(RED, 2, repeat=1),
    kernel(GEMM, 12, repeat=2), kernel(EW, 4, 2, repeat=2), kernel(EW2, 2, 2, repeat=2), kernel(RED, 4, repeat=2),
    # batch 16, its size cell empty, one repeat
    kernel(GEMM, 8, batch=16, size=NAN), kernel(RED, 2, batch=16, size=NAN),
    # a CPU run: CPU operators, no class of GPU kernels
    kernel("aten::mm", 100, batch=32, device="cpu"), kernel("aten::add", 50, batch=32, device="cpu"),
]
KEYS = ["model", "variant", "batch", "size", "mode", "dtype"]


@pytest.mark.filterwarnings("error")
def test_the_kernel_class_split_by_hand():
    """Per configuration and class: the median over repeats of the class's sum, the median
    kernels per iteration, the repeats, the share of the configuration's total; classes in
    kernel_class.CLASSES's order (matmul, reduction, elementwise: not alphabetical); the
    configuration with an empty size kept; the CPU run left out. Every full_name cell is
    empty (a column pandas reads as numbers): no warning."""
    got = suite.kernel_classes(pd.DataFrame(KERNELS))
    assert CLASSES.index("matmul/convolution") < CLASSES.index("reduction/normalisation") < \
        CLASSES.index("elementwise")
    want = pd.DataFrame([
        ("m", "eager", 8, "default", "inference", "float32", "matmul/convolution", 12.0, 1.0, 3, 0.6),
        ("m", "eager", 8, "default", "inference", "float32", "reduction/normalisation", 2.0, 1.0, 3, 0.1),
        ("m", "eager", 8, "default", "inference", "float32", "elementwise", 6.0, 3.0, 3, 0.3),
        ("m", "eager", 16, NAN, "inference", "float32", "matmul/convolution", 8.0, 1.0, 1, 0.8),
        ("m", "eager", 16, NAN, "inference", "float32", "reduction/normalisation", 2.0, 1.0, 1, 0.2),
    ], columns=KEYS + ["kernel_class", "time_per_iter_us", "kernels_per_iter", "repeats", "share"])
    assert got.columns.tolist() == want.columns.tolist()
    pd.testing.assert_frame_equal(got, want, check_dtype=False, rtol=1e-12)


def test_without_a_device_column_every_row_is_counted():
    gpu = pd.DataFrame(KERNELS[:14])
    assert suite.kernel_classes(gpu.drop(columns="device")).equals(suite.kernel_classes(gpu))


# --- each kernel's class and precision ---

def test_class_and_precision_from_the_short_and_the_full_name():
    """The class from the full name where the short one says nothing (a CUTLASS 3
    device_kernel), the precision from the full name, or from the short name where the full
    one is missing."""
    k = pd.DataFrame([
        {"name": "device_kernel", "full_name": "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal"
                                               "<cute::tuple<int, int, int>, cutlass::bfloat16_t>>(T1::Params)"},
        {"name": "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n", "full_name": NAN},
        {"name": EW, "full_name": NAN},
    ])
    got = suite.with_class(k)
    assert got["kernel_class"].tolist() == ["matmul/convolution", "matmul/convolution", "elementwise"]
    assert got["precision"].tolist() == ["bf16", "fp16", ""]
    assert got["name"].tolist() == k["name"].tolist() and "kernel_class" not in k   # a copy


@pytest.mark.filterwarnings("error")
def test_a_kernels_table_without_full_names():
    """By the short names alone, each row (two or more), with no warning (pandas warns of
    a text fill into a column of numbers, to become an error)."""
    got = suite.with_class(pd.DataFrame({"name": ["sm80_xmma_gemm_f16f16", RED, "some_kernel"]}, index=[5, 6, 7]))
    assert got["kernel_class"].tolist() == ["matmul/convolution", "reduction/normalisation", "other"]
    assert got["precision"].tolist() == ["fp16", "", ""]


# --- the slower-variant ledger ---

SLOW = {"model": "m", "variant": "compile", "batch": 8, **CONFIG, "status": "ok", "speedup": 0.8,
        "speedup_lo": 0.7, "speedup_hi": 0.9, "verdict": "slower"}
LEDGER_H = [{**SLOW, "variant": "eager", "speedup": 1.0, "speedup_lo": NAN, "speedup_hi": NAN, "verdict": ""},
            SLOW, {**SLOW, "batch": 16, "speedup": 1.5, "speedup_lo": 1.4, "speedup_hi": 1.6, "verdict": "faster"}]
BF16_REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16>>(T3)"
LEDGER_K = [
    # matmul: one kernel on both sides, seven eager only (7 .. 1 us); reduction: eager only;
    # elementwise: the variant only; attention (the first class), copies, other: neither
    kernel("gemm_shared", 50.0), kernel("gemm_shared", 40.0, variant="compile"),
    *[kernel(f"gemm_e{i}", 8.0 - i) for i in range(1, 8)],
    kernel(RED, 9.0, full_name=BF16_REDUCE),
    kernel("triton_poi_fused_add_0", 4.0, variant="compile"),
    # the faster configuration's kernels: not in the ledger
    kernel("gemm_other", 5.0, batch=16), kernel("triton_poi_fused_mul_0", 1.0, batch=16, variant="compile"),
]


def test_the_slower_ledger_by_hand():
    """At most 5 kernels a side per class (the largest), a class on one side only listed,
    classes in CLASSES's order, each row with the configuration, its speedup and both
    sides' class totals."""
    got = suite.slower(pd.DataFrame(LEDGER_H), pd.DataFrame(LEDGER_K))
    base = {"model": "m", "variant": "compile", "batch": 8, **CONFIG, "speedup": 0.8, "speedup_lo": 0.7,
            "speedup_hi": 0.9}
    mm = {"kernel_class": "matmul/convolution", "eager_class_us": 78.0, "variant_class_us": 40.0}
    want = [{**base, **mm, "side": "gone", "name": f"gemm_e{i}", "time_per_iter_us": 8.0 - i, "precision": ""}
            for i in range(1, 6)]
    want += [{**base, "kernel_class": "reduction/normalisation", "eager_class_us": 9.0, "variant_class_us": 0.0,
              "side": "gone", "name": RED, "time_per_iter_us": 9.0, "precision": "bf16"},
             {**base, "kernel_class": "elementwise", "eager_class_us": 0.0, "variant_class_us": 4.0,
              "side": "new", "name": "triton_poi_fused_add_0", "time_per_iter_us": 4.0, "precision": ""}]
    assert got.to_dict("records") == want
    assert len(suite.slower(pd.DataFrame(LEDGER_H), pd.DataFrame(LEDGER_K), top=7)) == 9


# --- write ---

def files(tmp_path, kernels_text: str):
    t = tmp_path / "results" / "tables"
    t.mkdir(parents=True)
    pd.DataFrame(LEDGER_H).drop(columns="size").to_csv(t / "headline.csv", index=False)   # no size: "default"
    (t / "kernels.csv").write_text(kernels_text)
    return t, [str(t / n) for n in ("headline.csv", "kernels.csv", "suite.csv", "kernel_classes.csv", "slower.csv")]


def test_write_the_three_tables_and_their_record(tmp_path):
    t, paths = files(tmp_path, pd.DataFrame(LEDGER_K).to_csv(index=False))
    said = suite.write(*paths)
    assert said == "suite: 1 rows; kernel classes: 6 rows; slower-variant ledger: 7 rows"
    h = pd.DataFrame(LEDGER_H)
    k = pd.read_csv(paths[1])
    assert (t / "suite.csv").read_text() == suite.suite(h).to_csv(index=False)
    assert (t / "kernel_classes.csv").read_text() == suite.kernel_classes(k).to_csv(index=False)
    assert (t / "slower.csv").read_text() == suite.slower(h, k).to_csv(index=False)
    ledger = pd.read_csv(t / "slower.csv")
    assert ledger.columns[0] == "model" and ledger["name"].tolist()[-2:] == [RED, "triton_poi_fused_add_0"]
    assert sorted(p.name for p in t.iterdir()) == ["headline.csv", "kernel_classes.csv", "kernels.csv",
                                                    "made_from.json", "slower.csv", "suite.csv"]
    sha = {n: hashlib.sha256((t / n).read_bytes()).hexdigest() for n in ("headline.csv", "kernels.csv")}
    assert json.loads((t / "made_from.json").read_text()) == {
        "tables/suite.csv": {"tables/headline.csv": sha["headline.csv"], "tables/kernels.csv": sha["kernels.csv"]}}


def test_write_with_an_empty_kernels_file(tmp_path):
    """A kernels file of no bytes (no kernel recorded): the suite as before, the classes
    table its header alone, the ledger empty."""
    t, paths = files(tmp_path, "")
    assert suite.write(*paths) == "suite: 1 rows; kernel classes: 0 rows; slower-variant ledger: 0 rows"
    assert (t / "suite.csv").read_text() == suite.suite(pd.DataFrame(LEDGER_H)).to_csv(index=False)
    assert (t / "kernel_classes.csv").read_text() == \
        "model,variant,batch,size,mode,dtype,kernel_class,time_per_iter_us,kernels_per_iter,repeats,share\n"
    assert (t / "slower.csv").read_text() == "\n"
