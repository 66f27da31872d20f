"""Every figure family writes the data it draws, and the audit reads each mark, label and
caption number against its record: drawn from a real H100 sweep's tables
(tests/data/real_models_rmsnorm_mlp), checked clean, then checked again with one
contradiction planted between a figure's data and its record."""
import os
import shutil

import pandas as pd
import pytest

from fusionlab.analysis.report import audit, audit_figures, plots
from fusionlab.analysis.sweep import suite as sweep_suite

DATA = os.path.join(os.path.dirname(__file__), "data", "real_models_rmsnorm_mlp")
MODEL = "rmsnorm_mlp"
FAMILIES = ["compile_cost", "crossover", "headline", "idle_breakdown", "kernel_classes", "kernel_durations",
            "kernels_per_iter", "launch_overhead", "over_fusion", "profiler_overhead", "roofline", "speedup_breakdown",
            "speedup_vs_batch", "suite"]   # scaling, kernel_roofline, timeline: test_figure_data_synthetic


def _scope(name):
    return "all" if plots.FIGURES[name][1] == "sweep" else MODEL


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """A results folder with the fixture's tables and every family drawn from them."""
    res = tmp_path_factory.mktemp("results")
    os.makedirs(res / "tables")
    os.makedirs(res / "device")
    for f in os.listdir(DATA):   # one setting, two variants: a figure of each family, drawn quickly
        if f.endswith(".csv"):
            d = pd.read_csv(os.path.join(DATA, f), low_memory=False)
            if "variant" in d:
                d = d[d["variant"].isin(["eager", "compile"])]
            if "mode" in d:
                d = d[(d["mode"] == "inference") & (d["dtype"] == "bfloat16")]
            d.to_csv(res / "tables" / f, index=False)
    sweep_suite.suite(pd.read_csv(res / "tables" / "headline.csv")).to_csv(res / "tables" / "suite.csv", index=False)
    sweep_suite.kernel_classes(pd.read_csv(res / "tables" / "kernels.csv", low_memory=False)).to_csv(
        res / "tables" / "kernel_classes.csv", index=False)
    shutil.copy(os.path.join(DATA, "peaks.json"), res / "device" / "peaks.json")
    tb = str(res / "tables")
    t = plots.load_tables(f"{tb}/runs.csv", f"{tb}/speedups.csv", None, str(res / "device" / "peaks.json"), None,
                          f"{tb}/kernel_resources.csv", f"{tb}/speedup_breakdown.csv", f"{tb}/headline.csv",
                          f"{tb}/kernels.csv", f"{tb}/suite.csv")
    for name in FAMILIES:
        s = _scope(name)
        d = res / "figures" / name
        os.makedirs(d)
        empty = plots.render(name, t, {s: (None, None)}, {s: str(d / f"{s}.rst")}, {s: str(d / f"{s}.data.csv")})
        assert not empty, name
    return res


_TABLES = {}


def _violations(res, names=FAMILIES) -> list[str]:
    """audit_figures' and audit.check_figure's violations of the families' data files
    (the fixture's tables read once, unless a test changed them)."""
    a = audit.Audit()
    key = str(res) if (res / "tables" / "changed").exists() else "fixture"
    if key not in _TABLES:
        t = audit_figures.load(str(res))
        h = audit.tables.with_size(t["headline"])
        _TABLES[key] = (t, {audit._key(r): r for r in h.to_dict("records")})
    t, records = _TABLES[key]
    for name in names:
        data = res / "figures" / name / f"{_scope(name)}.data.csv"
        audit_figures.check_file(a, str(data), t, str(res))
        marks = pd.read_csv(data) if data.read_text().count("\n") > 1 else pd.DataFrame()
        audit.check_figure(a, marks, records, f"figures/{name}/")
    return a.violations


@pytest.fixture
def copy(drawn, tmp_path):
    out = tmp_path / "r"
    shutil.copytree(drawn, out)
    return out


def test_every_family_writes_its_marks_and_the_audit_finds_them_true(drawn):
    for name in FAMILIES:
        marks = pd.read_csv(drawn / "figures" / name / f"{_scope(name)}.data.csv")
        assert len(marks) > 0 and marks["quantity"].notna().all(), name
    assert _violations(drawn) == []


# per family: a mark it writes (its mark and quantity) whose record is changed by 10%
PLANTS = {
    "compile_cost": ("bar", "speedups.compilation_latency_s"),
    "crossover": ("cell", "speedup"),
    "headline": ("bar", "wall_ms"),
    "kernel_classes": ("bar segment", "kernel_classes.time_per_iter_us"),
    "launch_overhead": ("point", "host_ms"),
    "speedup_breakdown": ("bar part", "host_saved_ms"),
    "speedup_vs_batch": ("point", "speedup"),
    "idle_breakdown": ("segment", "host_ms"),
    "kernel_durations": ("per iteration", "kernels.time_per_iter_us"),
    "kernels_per_iter": ("bar", "kernels_per_iter"),
    "over_fusion": ("point x", "kernel_resources.theoretical_occupancy"),
    "profiler_overhead": ("bar", "runs.profiler_overhead"),
    "roofline": ("bar", "runs.copy_bandwidth_frac_measured"),
    "suite": ("point", "suite.geomean_speedup"),
}


@pytest.mark.parametrize("name", FAMILIES)
def test_a_mark_that_contradicts_its_record_is_found(copy, name):
    path = copy / "figures" / name / f"{_scope(name)}.data.csv"
    marks = pd.read_csv(path)
    mark, quantity = PLANTS[name]
    hit = marks.index[(marks["mark"] == mark) & (marks["quantity"] == quantity)]
    assert len(hit), (name, sorted(set(zip(marks["mark"], marks["quantity"]))))
    marks.loc[hit[0], "value"] *= 1.1
    marks.to_csv(path, index=False)
    found = _violations(copy, [name])
    assert found and all(v.startswith(f"figures/{name}/") for v in found), found


@pytest.mark.parametrize("name", ["kernel_durations", "profiler_overhead", "compile_cost", "suite", "kernel_classes",
                                  "launch_overhead", "idle_breakdown", "roofline"])
def test_a_label_or_caption_number_that_contradicts_its_value_is_found(copy, name):
    path = copy / "figures" / name / f"{_scope(name)}.data.csv"
    marks = pd.read_csv(path, dtype={"text": object})
    labelled = marks.index[marks["text"].notna() & marks["fmt"].notna() & (marks["mark"] != "caption")]
    marks.loc[labelled[0], "text"] = "9999 ms"
    marks.to_csv(path, index=False)
    assert any("does not say" in v for v in _violations(copy, [name]))
    rst = copy / "figures" / name / f"{_scope(name)}.rst"
    quoted = marks.loc[marks["mark"] == "caption", "text"].dropna()
    if len(quoted):
        text = rst.read_text()
        rst.write_text(text.replace(quoted.iloc[0], "12345"))
        assert any("the caption does not quote" in v for v in _violations(copy, [name]))


@pytest.mark.parametrize("name", FAMILIES)
def test_a_drawn_figure_with_an_empty_data_file_is_found(copy, name):
    path = copy / "figures" / name / f"{_scope(name)}.data.csv"
    header = path.read_text().splitlines()[0]
    path.write_text(header + "\n")
    assert any("holds no mark" in v for v in _violations(copy, [name]))


def test_a_record_changed_under_a_figure_is_found(copy):
    """The same contradiction from the record's side: a kernel's time in tables/kernels.csv."""
    k = pd.read_csv(copy / "tables" / "kernels.csv")
    marks = pd.read_csv(copy / "figures" / "kernel_durations" / f"{MODEL}.data.csv")
    m = marks[marks["quantity"] == "kernels.time_per_iter_us"].iloc[0]
    rows = audit_figures.rows(k, m.to_dict())
    k.loc[rows.index, "time_per_iter_us"] *= 2
    k.to_csv(copy / "tables" / "kernels.csv", index=False)
    (copy / "tables" / "changed").write_text("")
    assert any("kernels.time_per_iter_us" in v for v in _violations(copy, ["kernel_durations"]))


@pytest.mark.parametrize("name, mark, quantity, text", [
    ("speedup_breakdown", "bar part source", "traffic_source", "measured"),   # modelled bytes drawn as measured
    ("crossover", "style", "verdict", "faster"),                              # an inconclusive cell without its '?'
    ("crossover", "label", "speedup", "9.99x"),
    ("headline", "label", "speedup", "9.99x [0.10, 0.20]"),
    ("speedup_vs_batch", "style", "verdict", "slower"),
])
def test_a_word_or_label_that_contradicts_its_record_is_found(copy, name, mark, quantity, text):
    path = copy / "figures" / name / f"{_scope(name)}.data.csv"
    marks = pd.read_csv(path, dtype={"text": object})
    hit = marks.index[(marks["mark"] == mark) & (marks["quantity"] == quantity) & (marks["text"] != text)]
    assert len(hit), (name, mark, quantity)
    marks.loc[hit[0], "text"] = text
    marks.to_csv(path, index=False)
    assert any(v.startswith(f"figures/{name}/") for v in _violations(copy, [name]))
