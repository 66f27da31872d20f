"""The paired speedup's numbers (runner.timing, core.ratios) against oracles written here
from their definitions: the percentile bootstrap over pairs, the Student t interval on the
log ratios, the host-state split; exact on small inputs."""
import math
import random
import statistics

import pytest

from fusionlab.core.ratios import median_ratio_ci
from fusionlab.runner import timing

V = [1.0, 1.3, 0.9, 1.1, 1.6, 1.05, 0.95]
E = [2.0, 2.1, 1.7, 2.6, 2.0, 1.9, 2.4]


def bootstrap_oracle(v, e, resamples, seed):
    """The documented interval: resamples of n whole pairs drawn with random.Random(seed)
    (randrange(n) each), the ratio of the resample's medians, sorted; the values at
    int(0.025 (R - 1)) and ceil(0.975 (R - 1))."""
    rng = random.Random(seed)
    pairs = list(zip(v, e))
    n = len(pairs)
    out = []
    for _ in range(resamples):
        s = [pairs[rng.randrange(n)] for _ in range(n)]
        out.append(statistics.median([b for _, b in s]) / statistics.median([a for a, _ in s]))
    out.sort()
    return out[int(0.025 * (resamples - 1))], out[math.ceil(0.975 * (resamples - 1))]


@pytest.mark.parametrize("resamples", [41, 200, 2000])
def test_median_ratio_ci_is_the_documented_bootstrap(resamples):
    assert median_ratio_ci(V, E, resamples=resamples) == bootstrap_oracle(V, E, resamples, 0)
    assert median_ratio_ci(V, E, resamples=resamples, seed=3) == bootstrap_oracle(V, E, resamples, 3)


def test_median_ratio_ci_defaults_and_missing_windows():
    assert median_ratio_ci(V, E) == bootstrap_oracle(V, E, 2000, 0)       # 2000 resamples, seed 0
    # a pair with a missing (0 or None) window on either side is left out, whole
    assert median_ratio_ci(V + [0.0, 1.2], E + [1.5, None]) == median_ratio_ci(V, E)
    assert median_ratio_ci([1.0, 0.0], [2.0, 3.0]) is None                # one pair left
    assert median_ratio_ci([1.0, 2.0], [2.0, 3.0]) is not None           # two pairs: an interval


def test_median_ratio_ci_at_its_percentiles_exact_index():
    """30 pairs of distinct windows (an even count: each median the mean of two, so few
    ties): the sorted resampled ratios differ on each side of each percentile's index, so
    an index or a resample count off by one gives another interval."""
    rng = random.Random(2)      # (windows where a 2001st resample moves the interval)
    v = [1.0 + rng.random() for _ in range(30)]
    e = [2.0 + rng.random() for _ in range(30)]
    want = bootstrap_oracle(v, e, 2000, 0)
    assert median_ratio_ci(v, e) == want
    assert bootstrap_oracle(v, e, 2001, 0) != want
    rng = random.Random(0)
    pairs = list(zip(v, e))
    out = sorted(statistics.median([b for _, b in s]) / statistics.median([a for a, _ in s])
                 for s in ([pairs[rng.randrange(30)] for _ in range(30)] for _ in range(2000)))
    assert out[48] < out[49] == want[0] < out[50] and out[1949] < out[1950] == want[1] < out[1951]


def test_paired_speedup_is_the_ratio_of_the_medians():
    assert timing.paired_speedup(V, E) == statistics.median(E) / statistics.median(V)
    assert timing.paired_speedup([1.0, 0.0, 3.0], [2.0, 4.0]) == 3.0 / 2.0   # missing windows dropped per side
    assert timing.paired_speedup([], E) is None and timing.paired_speedup(V, [0.0]) is None


def test_pair_ratio_ci_is_the_t_interval_of_the_log_ratios():
    logs = [math.log(b / a) for a, b in zip(V, E)]
    m, sd, n = statistics.fmean(logs), statistics.stdev(logs), len(logs)
    t = 2.4469118511449692          # Student t, 97.5%, 6 degrees of freedom
    lo, hi = timing.pair_ratio_ci(V, E)
    assert lo == pytest.approx(math.exp(m - t * sd / math.sqrt(n)), rel=1e-4)     # t to 3 decimals
    assert hi == pytest.approx(math.exp(m + t * sd / math.sqrt(n)), rel=1e-4)
    assert timing.ci_half_width(V, E) == pytest.approx(math.exp(t * sd / math.sqrt(n)) - 1, rel=1e-3)
    assert timing.pair_ratio_ci([1.0], [2.0]) is None and timing.ci_half_width([1.0], [2.0]) is None
    assert timing.pair_ratio_ci([1.0, 0.0, 2.0], [2.0, 3.0, 3.0]) == timing.pair_ratio_ci([1.0, 2.0], [2.0, 3.0])


@pytest.mark.parametrize("n,t", [(2, 12.706), (3, 4.303), (7, 2.447), (9, 2.306), (12, 2.228), (13, 2.179),
                                 (21, 2.086), (26, 2.060), (31, 2.042), (41, 2.021), (61, 2.000), (200, 1.980)])
def test_the_t_quantile_is_the_tables_at_or_below_the_degrees_of_freedom(n, t):
    # 12 pairs (11 degrees of freedom, t = 2.201) take 10's 2.228: wider, never narrower
    v = [1.0 + 0.01 * (i % 5) for i in range(n)]
    e = [2.0 + 0.03 * (i % 3) for i in range(n)]
    logs = [math.log(b / a) for a, b in zip(v, e)]
    lo, hi = timing.pair_ratio_ci(v, e)
    assert math.log(hi / lo) / 2 / (statistics.stdev(logs) / math.sqrt(n)) == pytest.approx(t, rel=1e-9)


def test_host_states_split_the_pairs_at_the_fast_states_probe():
    # probes 1.0 before pair 0, then 1.0, 1.3, 1.3, 1.0: pair means 1.0, 1.15, 1.3, 1.15
    v, e = [1.0, 1.0, 2.0, 1.0], [2.0, 2.0, 2.0, 2.0]
    probes = [1.0, 1.0, 1.3, 1.3, 1.0]
    assert timing.pair_probes(probes, 4) == [1.0, 1.15, 1.3, 1.15]
    assert timing.pair_probes([1.0, None, 2.0], 3) == [None, None, None] and timing.pair_probes(None, 2) == [None] * 2
    out = timing.host_states(v, e, probes)
    # the cut is 1.2 x 1.0: pairs 0, 1, 3 fast (ratio 2), pair 2 slow (ratio 1)
    assert out == {"paired_speedup_fast_host": 2.0, "paired_speedup_slow_host": 1.0,
                   "host_state_pairs": {"fast": 3, "slow": 1}, "paired_host_sensitive": True}
    same = timing.host_states([1.0, 1.0], [2.0, 2.09], [1.0, 1.0, 2.0])
    assert same["host_state_pairs"] == {"fast": 1, "slow": 1} and same["paired_host_sensitive"] is False  # 4.5% apart
    assert timing.host_states([1.0, 1.0], [2.0, 2.12], [1.0, 1.0, 2.0])["paired_host_sensitive"] is True  # 6%
    assert timing.host_states([1.0, 1.0], [2.0, 2.0], [1.0, 1.0, 1.0])["paired_speedup_slow_host"] is None
    none = {"paired_speedup_fast_host": None, "paired_speedup_slow_host": None, "host_state_pairs": None,
            "paired_host_sensitive": None}
    assert timing.host_states(v, e, []) == none and timing.host_states(v, [], probes) == none
