"""analysis.sweep.scaling on synthetic times whose scaling law t = a + b*s^k is known exactly."""
import functools
import math

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.sweep import scaling

DIMS = [1024, 2048, 4096, 8192, 16384]


def law(a, b, k, s):
    return a + b * np.asarray(s, dtype=float) ** k


@pytest.mark.parametrize("a, b, k, sizes", [
    (0.02, 1e-9, 3.0, DIMS),
    (0.5, 0.01, 1.0, list(range(2, 17))),
    (1.5, 2e-4, 2.0, [16, 64, 256]),          # exactly 3 sizes: 3 points, 3 parameters
])
def test_fit_recovers_exact_parameters(a, b, k, sizes):
    r = scaling.fit(sizes, law(a, b, k, sizes))
    assert r["a"] == pytest.approx(a, rel=1e-3)
    assert r["b"] == pytest.approx(b, rel=1e-3)
    assert r["k"] == pytest.approx(k, rel=1e-3)
    assert r["fixed_size"] == pytest.approx((a / b) ** (1 / k), rel=1e-3)
    assert r["rmse_log"] < 1e-6
    assert r["n_sizes"] == len(sizes)


def test_fit_without_fixed_cost():
    r = scaling.fit(DIMS, law(0.0, 3e-7, 2.0, DIMS))
    assert r["a"] == 0
    assert r["k"] == pytest.approx(2.0, rel=1e-3)
    assert r["b"] == pytest.approx(3e-7, rel=1e-3)
    assert math.isnan(r["fixed_size"])


def test_fit_repeated_sizes_and_bad_points():
    s = DIMS * 2 + [512, 256]
    t = list(law(0.02, 1e-9, 3.0, DIMS * 2)) + [np.nan, 0.0]   # a failed and a zero time: dropped
    r = scaling.fit(s, t)
    assert r["k"] == pytest.approx(3.0, rel=1e-3) and r["n_sizes"] == 5


def test_fit_needs_three_sizes():
    with pytest.raises(ValueError, match="need 3 or more sizes to fit t = a \\+ b\\*s\\^k, got 2"):
        scaling.fit([1024, 1024, 2048], [1.0, 1.1, 2.0])
    with pytest.raises(ValueError, match="got 2"):
        scaling.fit([1024, 2048, 4096], [1.0, 2.0, np.nan])


def noisy(a, b, k, sizes, repeats=3, sd=0.02, seed=1):
    s = np.repeat(sizes, repeats)
    return s, law(a, b, k, s) * np.exp(np.random.default_rng(seed).normal(0, sd, len(s)))


def test_bootstrap_ci_contains_true_k():
    s, t = noisy(0.02, 1e-9, 3.0, DIMS)
    lo, hi = scaling.bootstrap_k(s, t)
    assert lo < 3.0 < hi
    assert hi - lo < 0.5
    s, t = noisy(0.5, 0.01, 1.0, [2, 4, 8, 16, 32, 64], sd=0.01, seed=2)
    lo, hi = scaling.bootstrap_k(s, t)
    assert lo < 1.0 < hi


def test_bootstrap_deterministic_and_needs_four_sizes():
    s, t = noisy(0.02, 1e-9, 3.0, DIMS, sd=0.05)
    assert scaling.bootstrap_k(s, t, n=300, seed=3) == scaling.bootstrap_k(s, t, n=300, seed=3)
    assert scaling.bootstrap_k(s, t, n=300, seed=3) != scaling.bootstrap_k(s, t, n=300, seed=4)
    s3, t3 = noisy(0.02, 1e-9, 3.0, DIMS[:3])
    assert all(math.isnan(v) for v in scaling.bootstrap_k(s3, t3))


@pytest.fixture
def few_resamples(monkeypatch):
    """scaling.table's bootstrap of k at 100 resamples, not its 1000 (seconds a table): the
    tables and figures below check the fits and what is drawn; the bootstrap is checked at
    its default above."""
    monkeypatch.setattr(scaling, "bootstrap_k", functools.partial(scaling.bootstrap_k, n=100))


def runs_frame():
    """Two variants of one model swept over 4 dims (2 repeats, times 1% either side of the
    law, so the medians lie on it exactly) plus a failed third repeat; another model with
    only 2 dims; a third whose third dim only failed."""
    rows = []
    law_of = {"eager": (0.05, 2e-10, 3.0, 1e-3, 1.0), "compile": (0.01, 1e-10, 2.5, 2e-4, 1.5)}
    for variant, (a, b, k, ga, gk) in law_of.items():
        for dim in [512, 1024, 2048, 4096]:
            for rep, f in enumerate((0.99, 1.01, np.nan)):
                rows.append({"model": "mlp", "variant": variant, "dim": dim, "repeat": rep,
                             "wall_time_per_iter_ms": law(a, b, k, dim) * f,
                             "gpu_time_per_iter_ms": law(ga, 1e-6, gk, dim) * f})
    for model, dims, fails in (("small", [512, 1024], []), ("broken", [512, 1024, 2048], [2048])):
        for dim in dims:
            for rep in range(2):
                t = np.nan if dim in fails else law(0.1, 1e-6, 1.0, dim)
                rows.append({"model": model, "variant": "eager", "dim": dim, "repeat": rep,
                             "wall_time_per_iter_ms": t, "gpu_time_per_iter_ms": t})
    df = pd.DataFrame(rows)
    df = df.assign(mode="inference", dtype="float32", backend="inductor", device="cuda", batch=8,
                   size=[f"dim{d}" for d in df["dim"]])
    return df, law_of


def test_table_one_row_per_variant_and_metric(few_resamples):
    df, law_of = runs_frame()
    out = scaling.table(df)
    assert list(out.columns) == scaling.COLUMNS
    assert len(out) == 4                       # 2 variants x 2 metrics; "small", "broken" give none
    assert set(out["model"]) == {"mlp"} and set(out["axis"]) == {"dim"}
    assert set(out["fixed"]) == {"batch=8"}
    for _, r in out.iterrows():
        a, b, k, ga, gk = law_of[r["variant"]]
        if r["metric"] == "wall":
            assert (r["a_ms"], r["b"], r["k"]) == pytest.approx((a, b, k), rel=1e-3)
        else:
            assert r["metric"] == "gpu"
            assert (r["a_ms"], r["b"], r["k"]) == pytest.approx((ga, 1e-6, gk), rel=1e-3)
        assert r["n_sizes"] == 4 and r["sizes"] == "512 1024 2048 4096"
        assert r["k_lo"] <= r["k"] <= r["k_hi"]
        assert r["fixed_size"] == pytest.approx((r["a_ms"] / r["b"]) ** (1 / r["k"]), rel=1e-6)
    text = scaling.describe(out[(out["variant"] == "compile") & (out["metric"] == "wall")].iloc[0])
    assert text.startswith("compile, wall, along dim (batch 8): t = 0.01 ms + 1e-10 * dim^2.50 (k 95% CI ")
    assert text.endswith(f"; fixed cost dominates below dim {(0.01 / 1e-10) ** (1 / 2.5):.0f}.")


def test_table_empty_and_describe_without_ci():
    df, _ = runs_frame()
    assert list(scaling.table(df.iloc[:0]).columns) == scaling.COLUMNS
    assert scaling.table(df[df["model"] != "mlp"]).empty
    row = {"variant": "eager", "metric": "gpu", "axis": "num_layers", "fixed": "", "a_ms": 0.0, "b": 0.5,
           "k": 1.0, "k_lo": np.nan, "k_hi": np.nan, "fixed_size": np.nan}
    assert scaling.describe(row) == "eager, gpu, along num_layers: t = 0 ms + 0.5 * num_layers^1.00."


def test_fit_note_says_what_limits_a_fit():
    assert scaling.fit_note(scaling.fit(DIMS, law(0.02, 1e-9, 3.0, DIMS))) == ""
    exact = scaling.fit([16, 64, 256], law(1.5, 2e-4, 2.0, [16, 64, 256]))
    assert scaling.fit_note(exact) == "exact fit: 3 sizes for 3 parameters, no CI; sweep 4 or more sizes"
    flat_then_steep = scaling.fit([256, 1024, 2048, 4096], [0.6, 0.6, 0.6, 1.1])   # k beyond 4
    assert "k at the edge of its range (0.05-4)" in scaling.fit_note(flat_then_steep)
    zigzag = scaling.fit([1, 2, 4, 8], [1.0, 3.0, 1.0, 3.0])
    assert "poor fit" in scaling.fit_note(zigzag)
    row = {"variant": "eager", "metric": "wall", "axis": "dim", "fixed": "", "a_ms": 1.5, "b": 2e-4, "k": 2.0,
           "k_lo": np.nan, "k_hi": np.nan, "fixed_size": np.nan, "note": scaling.fit_note(exact)}
    assert scaling.describe(row).endswith("(exact fit: 3 sizes for 3 parameters, no CI; sweep 4 or more sizes).")


def test_summary_section_and_figure(tmp_path, few_resamples):
    """The table feeds summary.md's 'Scaling law' section (wall fits only) and the figure
    (a panel per axis, a fitted line per variant and metric)."""
    from fusionlab.analysis.report import plots, summary
    df, _ = runs_frame()
    df = df.assign(status="ok")
    fits = scaling.table(df)
    text = "\n".join(summary.scaling_md(fits))
    assert "## Scaling law: how wall time grows with size" in text and "### mlp" in text
    assert text.count("\n- ") == 2 and "compile, wall, along dim (batch 8)" in text
    assert summary.scaling_md(fits.iloc[:0]) == []
    fig = plots.FIGURES["scaling"][0]({"scaling": fits, "runs": df}, "mlp")
    ax = [a for a in fig.axes if a.get_visible()]
    assert len(ax) == 1 and len(ax[0].get_lines()) >= 4
    assert {t.get_text().split(":")[0] for t in ax[0].get_legend().get_texts()} == \
        {"compile wall", "eager wall", "compile gpu", "eager gpu"}
    plots.save(fig, str(tmp_path / "s.png"))
    assert (tmp_path / "s.png").stat().st_size > 1000
    from fusionlab.analysis.report import style
    with pytest.raises(style.NoData, match="3 or more sizes"):
        plots.FIGURES["scaling"][0]({"scaling": fits.iloc[:0], "runs": df}, "mlp")


def test_figure_panel_for_runs_without_a_size_axis(few_resamples):
    """Runs recorded without a size column value (nan) still land in their panel."""
    from fusionlab.analysis.report import plots
    df, _ = runs_frame()
    df = df[df["model"] == "mlp"].assign(status="ok")
    df = pd.concat([df.assign(num_layers=4.0), df.assign(num_layers=np.nan)], ignore_index=True)
    df["size_axes"] = "dim,num_layers"          # as run_metrics records the axes each run has
    fits = scaling.table(df)
    assert set(fits["fixed"]) == {"batch=8 num_layers=4", "batch=8 num_layers=nan"}
    fig = plots.FIGURES["scaling"][0]({"scaling": fits, "runs": df}, "mlp")
    panels = [a for a in fig.axes if a.get_visible()]
    assert len(panels) == 2
    for ax in panels:          # each panel: 2 variants x (wall, gpu) points at the 4 dims
        assert len(ax.containers) == 4 and all(len(c.lines[0].get_xdata()) == 4 for c in ax.containers)


def test_two_dtypes_in_one_sweep_stay_apart(few_resamples):
    from fusionlab.analysis.report import plots, summary
    df, _ = runs_frame()
    df = df[df["model"] == "mlp"].assign(status="ok")
    df = pd.concat([df, df.assign(dtype="bfloat16", wall_time_per_iter_ms=df["wall_time_per_iter_ms"] / 2)],
                   ignore_index=True)
    fits = scaling.table(df)
    assert len(fits) == 8
    text = "\n".join(summary.scaling_md(fits))
    assert text.count("- bfloat16 ") == 2 and text.count("- float32 ") == 2
    fig = plots.FIGURES["scaling"][0]({"scaling": fits, "runs": df}, "mlp")
    labels = [t.get_text().split(":")[0] for t in fig.axes[0].get_legend().get_texts()]
    assert len(labels) == len(set(labels)) == 8 and "compile bfloat16 wall" in labels
