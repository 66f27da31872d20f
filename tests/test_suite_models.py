"""The suite (analysis.sweep.suite) over several models with several configurations each,
where the way the interval resamples shows: the geometric mean against a hand computation,
its interval against a bootstrap over models worked out by hand (every resample of three
models enumerated; for five, one drawn apart from the suite's), and the counts."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.report import audit
from fusionlab.analysis.sweep import headline, suite

# model -> its configurations' speedups (batch 8, 16, ...); each model's configurations
# spread widely, the models' geometric means apart
THREE = {"a": [0.5, 2.0], "b": [1.2, 1.5, 1.8], "c": [2.0, 3.0, 4.5, 6.0]}
FIVE = {m: [g * f for f in (0.95, 1.0, 1.05, 1.02)] for m, g in
        zip("abcde", (0.8, 1.0, 1.3, 1.7, 2.5))}


def records(speedups: dict, variant="compile") -> pd.DataFrame:
    rows = []
    for model, values in speedups.items():
        for i, s in enumerate(values):
            rows.append({"model": model, "variant": variant, "batch": 8 << i, "size": "default",
                         "mode": "inference", "dtype": "float32", "status": "ok", "estimator": "paired",
                         "speedup": s, "speedup_lo": s * 0.9, "speedup_hi": s * 1.1,
                         "verdict": headline.verdict(s, s * 0.9, s * 1.1), "host_skewed": False,
                         "compile_s": 10.0 + i, "break_even_iters": np.nan})
    return pd.DataFrame(rows)


def geomean(values) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def test_three_models_geomean_and_counts_by_hand():
    row = suite.suite(records(THREE)).iloc[0]
    every = [s for v in THREE.values() for s in v]
    assert row["geomean_speedup"] == pytest.approx(geomean(every), rel=1e-12)   # over configurations
    assert (row["n_models"], row["n_configs"], row["n_pass"], row["n_compared"]) == (3, 9, 9, 9)
    assert (row["min_speedup"], row["max_speedup"]) == (0.5, 6.0)
    assert row["compile_s_median"] == 11.0      # 10, 11, 10, 11, 12, 10, 11, 12, 13


def test_three_models_interval_is_the_exact_bootstrap_over_models():
    """Every one of the 3^3 equally likely resamples of three models, each resample's
    geometric mean over the configurations it draws: 1 in 27 (3.7%, more than 2.5%) is
    model a three times, so the 2.5% quantile is a's own geometric mean, and the 97.5% c's.
    Resampling configurations, or averaging the speedups, gives another interval."""
    logs = {m: [math.log(s) for s in v] for m, v in THREE.items()}
    atoms = sorted(np.mean(sum((logs[m] for m in pick), [])) for pick in itertools.product(THREE, repeat=3))
    assert sum(a == atoms[0] for a in atoms) == 1 and 1 / 27 > 0.025
    assert math.exp(atoms[0]) == pytest.approx(geomean(THREE["a"]), rel=1e-12)   # 1.0
    row = suite.suite(records(THREE)).iloc[0]
    assert (row["geomean_lo"], row["geomean_hi"]) == pytest.approx((geomean(THREE["a"]), geomean(THREE["c"])),
                                                                  rel=1e-12)
    # not the arithmetic means of the same models, nor the configurations' extremes
    assert row["geomean_hi"] != pytest.approx(np.mean(THREE["c"]), rel=1e-3)
    assert (row["geomean_lo"], row["geomean_hi"]) != pytest.approx((0.5, 6.0), rel=1e-3)


def hand_bootstrap(by: dict, n=4000, seed=12345, over="models") -> tuple[float, float]:
    """The 95% bootstrap interval of the geometric mean: draw len(by) models with
    replacement (or, over="configurations", as many configurations), the geometric mean
    of what was drawn, n times; the 2.5% and 97.5% quantiles."""
    rng = np.random.default_rng(seed)
    models = list(by)
    flat = [s for v in by.values() for s in v]
    means = []
    for _ in range(n):
        if over == "models":
            drawn = [s for i in rng.integers(0, len(models), len(models)) for s in by[models[i]]]
        else:
            drawn = [flat[i] for i in rng.integers(0, len(flat), len(flat))]
        means.append(np.mean(np.log(drawn)))
    return float(np.exp(np.quantile(means, 0.025))), float(np.exp(np.quantile(means, 0.975)))


def test_five_models_interval_against_a_hand_bootstrap_over_models():
    row = suite.suite(records(FIVE)).iloc[0]
    lo, hi = hand_bootstrap(FIVE)
    # two bootstraps of their own draws: their ends agree to a few percent
    assert row["geomean_lo"] == pytest.approx(lo, rel=0.04) and row["geomean_hi"] == pytest.approx(hi, rel=0.04)
    # resampling the 20 configurations instead: an interval far narrower, which the suite's is not
    clo, chi = hand_bootstrap(FIVE, over="configurations")
    assert (hi / lo) > 1.4 * (chi / clo)
    assert row["geomean_hi"] / row["geomean_lo"] > 1.3 * (chi / clo)
    assert row["verdict"] == headline.verdict(row["geomean_speedup"], row["geomean_lo"], row["geomean_hi"])


def test_the_audit_recomputes_the_suite_of_several_models():
    h = records(THREE)
    table = suite.suite(h)
    a = audit.Audit()
    audit.check_suite(a, h, table, None)
    assert a.violations == []
    a = audit.Audit()   # the arithmetic mean quoted as the geometric one
    audit.check_suite(a, h, table.assign(geomean_speedup=np.mean([s for v in THREE.values() for s in v])), None)
    assert any("geometric mean" in v for v in a.violations), a.violations


def test_a_failed_configuration_of_one_model_leaves_the_others_counted():
    h = records(THREE)
    h.loc[(h["model"] == "c") & (h["batch"] == 8), ["status", "speedup", "speedup_lo", "speedup_hi", "verdict"]] = \
        ["incorrect", np.nan, np.nan, np.nan, ""]
    row = suite.suite(h).iloc[0]
    assert (row["n_models"], row["n_configs"], row["n_pass"], row["n_compared"], row["n_incorrect"]) == \
        (3, 9, 8, 8, 1)
    assert row["pass_rate"] == 8 / 9
    assert row["geomean_speedup"] == pytest.approx(geomean([0.5, 2.0, 1.2, 1.5, 1.8, 3.0, 4.5, 6.0]), rel=1e-12)
    assert row["geomean_hi"] == pytest.approx(geomean([3.0, 4.5, 6.0]), rel=1e-12)


def test_a_resample_pools_the_configurations_of_the_models_it_draws():
    """One model with eight configurations among four with one: a resample's geometric mean
    is over the configurations it draws (as the point estimate is), so drawing d once
    weighs 8 of its configurations; a mean of per-model means would weigh it 1 in 5."""
    uneven = {"a": [0.5], "b": [0.8], "c": [1.0], "d": [3.0] * 8, "e": [1.2]}
    row = suite.suite(records(uneven)).iloc[0]
    lo, hi = hand_bootstrap(uneven)
    assert row["geomean_lo"] == pytest.approx(lo, rel=0.06) and row["geomean_hi"] == pytest.approx(hi, rel=0.04)
    assert row["geomean_hi"] > 2.5    # a mean of per-model means: 1.92
