"""The figure families no recorded fixture of test_figure_data draws (scaling: 3 or more
sizes; kernel_roofline: Nsight Compute's FLOP counts; the timeline: an nsys export), drawn
from small hand-made tables: each writes the data it draws, the audit finds it true, and
finds one contradiction planted between a mark and its record (or, for the timeline, its
busy time and the kernels it draws)."""
import functools
import os
import shutil

import pandas as pd
import pytest

from fusionlab.analysis.report import audit, audit_figures, plots, style, timeline
from fusionlab.analysis.sweep import headline as sweep_headline
from fusionlab.analysis.sweep import scaling as sweep_scaling
from test_bytes_roofline import _k
from test_scaling import runs_frame


def _results(tmp_path, tables: dict) -> str:
    """A results folder holding these tables (name -> frame) and a headline row per
    configuration they name, as the audit reads a sweep's."""
    os.makedirs(tmp_path / "tables")
    for name, df in tables.items():
        df.to_csv(tmp_path / "tables" / f"{name}.csv", index=False)
    keys = ["model", "variant", "batch", "size", "mode", "dtype", "device"]
    configs = pd.concat([df[keys] for df in tables.values() if set(keys) <= set(df)]).drop_duplicates()
    configs.assign(status="ok").reindex(columns=sweep_headline.COLUMNS).to_csv(tmp_path / "tables" / "headline.csv",
                                                                              index=False)
    return str(tmp_path)


def _draw(res: str, name: str, scope: str, t: dict) -> str:
    t = {**t, "headline": pd.read_csv(os.path.join(res, "tables", "headline.csv"))}
    d = os.path.join(res, "figures", name)
    os.makedirs(d)
    assert plots.render(name, t, {scope: (None, None)}, {scope: os.path.join(d, f"{scope}.rst")},
                        {scope: os.path.join(d, f"{scope}.data.csv")}) == []
    return os.path.join(d, f"{scope}.data.csv")


def _violations(res: str, data: str) -> list[str]:
    a = audit.Audit()
    t = audit_figures.load(res)
    audit_figures.check_file(a, data, t, res)
    marks = pd.read_csv(data)
    h = audit.tables.with_size(t["headline"])
    audit.check_figure(a, marks, {audit._key(r): r for r in h.to_dict("records")}, os.path.relpath(data, res))
    return a.violations


def _plant(data: str, mark: str, quantity: str, factor: float = 1.1) -> None:
    m = pd.read_csv(data)
    hit = m.index[(m["mark"] == mark) & (m["quantity"] == quantity)]
    assert len(hit), sorted(set(zip(m["mark"], m["quantity"])))
    m.loc[hit[0], "value"] *= factor
    m.to_csv(data, index=False)


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    """The scaling figure of runs_frame's mlp (2 variants over 4 dims), 100 bootstrap resamples."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sweep_scaling, "bootstrap_k", functools.partial(sweep_scaling.bootstrap_k, n=100))
        runs, _ = runs_frame()
        runs = runs[runs["model"] == "mlp"].assign(status="ok")
        fits = sweep_scaling.table(runs)
    res = _results(tmp_path_factory.mktemp("scaled"), {"runs": runs, "scaling": fits})
    return res, _draw(res, "scaling", "mlp", {"runs": runs, "scaling": fits, "speedups": pd.DataFrame()})


@pytest.mark.parametrize("mark, quantity", [("point", "runs.wall_time_per_iter_ms"), ("legend", "scaling.k")])
def test_scaling_marks_are_checked(scaled, tmp_path, mark, quantity):
    res, data = _copy(scaled, tmp_path)
    m = pd.read_csv(data)
    assert len(m[m["quantity"] == "runs.wall_time_per_iter_ms"]) == 2 * 4   # 2 variants x 4 dims
    assert len(m[m["quantity"] == "scaling.k"]) == 2 * 2                     # 2 variants x wall, gpu
    assert _violations(res, data) == []
    _plant(data, mark, quantity)
    assert any(quantity in v for v in _violations(res, data))


@pytest.fixture(scope="module")
def kernel_roofs(tmp_path_factory):
    """The per-kernel roofline of two hand-counted kernels (test_bytes_roofline)."""
    k = pd.DataFrame([_k("gemm", 0.0, 1e11, 150.0, 1e8, 4e8, 200.0), _k("sigmoid", 1e8, 0.0, 100.0, 6.7e8, 7e8, 250.0)])
    k = k.assign(device="cuda", repeat=0, time_per_iter_us=k["ncu_time_us"], calls_per_iter=1.0)
    runs = k[["model", "variant", "batch", "size", "mode", "dtype", "device"]].drop_duplicates().assign(
        backend="nsys", status="ok")
    res = _results(tmp_path_factory.mktemp("roofs"), {"kernels": k, "runs": runs})
    return res, _draw(res, "kernel_roofline", "lstm_cell", {"kernels": k, "runs": runs, "speedups": pd.DataFrame()})


def _copy(drawn, tmp_path):
    """(results, data file) of a copy of a drawn fixture's folder."""
    res = shutil.copytree(drawn[0], tmp_path / "r")
    return str(res), os.path.join(res, os.path.relpath(drawn[1], drawn[0]))


@pytest.mark.parametrize("mark, quantity", [("point", "kernel_roofline.achieved_flops"),
                                            ("label", "kernel_roofline.fraction_of_roof")])
def test_kernel_roofline_marks_are_checked(kernel_roofs, tmp_path, mark, quantity):
    res, data = _copy(kernel_roofs, tmp_path)
    m = pd.read_csv(data)
    assert set(m.loc[m["quantity"] == "kernel_roofline.fraction_of_roof", "text"]) == {"51%", "80%"}
    assert _violations(res, data) == []
    _plant(data, mark, quantity)
    assert any(quantity in v for v in _violations(res, data))


def _iteration(starts_us, ends_us):
    """One iteration as readers.nsys_timeline gives it: its NVTX range 0..100 us (in ns),
    kernels at these times, a launch call before each."""
    ns = 1000
    kernels = pd.DataFrame({"start": [s * ns for s in starts_us], "end": [e * ns for e in ends_us],
                            "name": [f"k{i}" for i in range(len(starts_us))], "full_name": ""})
    calls = pd.DataFrame({"start": [(s - 1) * ns for s in starts_us], "name": "cudaLaunchKernel_v7000"})
    nvtx = pd.DataFrame({"start": [0], "end": [100 * ns], "text": ["iteration"]})
    return {"range": (0, 100 * ns), "kernels": kernels, "calls": calls, "nvtx": nvtx, "n": 1}


def test_the_timeline_busy_time_is_the_kernels_it_draws(tmp_path):
    fig = timeline.draw([("eager", _iteration([10, 40], [30, 45])), ("compile", _iteration([20], [32]))])
    data = str(tmp_path / "m.data.csv")
    plots.write_marks(fig, "timeline", "m", data)
    style.plt.close(fig)
    m = pd.read_csv(data)
    busy = m[m["quantity"] == "marks.duration_us"].set_index("variant")
    assert busy["value"].to_dict() == {"eager": 25.0, "compile": 12.0}   # 20 + 5 us; 12 us
    assert set(busy["text"]) == {"25 us", "12 us"}
    a = audit.Audit()
    audit_figures.check_file(a, data, {}, str(tmp_path))
    assert a.violations == []
    _plant(data, "kernel", "duration_us", factor=2.0)   # a box drawn twice as long as the busy time says
    a = audit.Audit()
    audit_figures.check_file(a, data, {}, str(tmp_path))
    assert any("marks.duration_us" in v for v in a.violations)


def test_a_timeline_drawn_without_marks_is_found_and_a_marker_is_not(tmp_path):
    for name, fig in (("drawn", timeline.draw([("eager", _iteration([10], [30]))])), ("marker", plots.marker("x"))):
        data = str(tmp_path / f"{name}.data.csv")
        m = plots.write_marks(fig, "timeline", name, data)
        plots.save(fig, str(tmp_path / f"{name}.png"))
        if name == "drawn":
            pd.DataFrame(columns=m.columns).to_csv(data, index=False)   # its marks lost
        a = audit.Audit()
        audit_figures.check_file(a, data, {}, str(tmp_path))
        assert bool(a.violations) == (name == "drawn"), (name, a.violations)
    style.plt.close("all")


def test_a_gpu_running_behind_the_host_is_busy_not_idle_before_the_iterations_kernels():
    """This iteration's kernels at 120-175 and 180-190 us; earlier iterations' kernels run
    until 118 us: the GPU idles 2 us and 5 us, not the 120 us before its first kernel."""
    it = _iteration([120, 180], [175, 190])
    it["others"] = pd.DataFrame({"start": [-50_000, 55_000], "end": [55_000, 118_000]})   # ns, back to back
    fig = timeline.draw([("compile", it)])
    m = pd.DataFrame(style.marks(fig))
    assert sorted(m.loc[m["quantity"] == "idle_us", "value"].round(9)) == [2.0, 5.0]
    assert m.loc[m["quantity"] == "marks.duration_us", "value"].tolist() == [65.0]   # its own kernels only
    style.plt.close(fig)
