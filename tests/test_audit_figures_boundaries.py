"""The figures' data audit (report.audit_figures) at its edges: each label format and
aggregate on values worked out by hand (a share at 0.005, a geometric mean of the positive
values only, the true values written every way a table writes them), the keys a mark
names (batch and repeat as numbers, an empty key no filter, a key the table lacks left
out), a quantity's value from one row, a ratio of two columns, a missing table, column or
aggregate, the figure's own marks as a table, the tables read from a results folder
(rows other than ok left out, the headline's kept), and a data file's checks: empty
beside a drawn figure, unreadable, or beside a "No data" caption; each violation word for
word and each count of checks exact."""
import gzip
import math
import os

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.report import audit, audit_figures as af


def test_each_label_format_writes_its_value_so():
    f = af.FORMATS
    assert [f["g"](v) for v in (2.5, 1e-5, 3.0)] == ["2.5", "1e-05", "3"]
    assert [f["3g"](v) for v in (3.14159, 1234.5)] == ["3.14", "1.23e+03"]
    assert [f["2f"](v) for v in (2.5, 3.14159)] == ["2.50", "3.14"]
    assert f["x2f"](1.5) == "1.50x"
    assert [f["share"](v) for v in (0.0, 0.0049, 0.005, 0.0051, 0.25, 1.0, -0.1)] == [
        "0%", "<1%", "0%", "1%", "25%", "100%", "-10%"]
    assert [f["share_whole"](v) for v in (0.0, 0.0049, 0.005, 0.0051, 0.25, -0.1)] == [
        "0", "<1", "0", "1", "25", "-10"]
    assert [f["ms"](v) for v in (1.2, 0.0748, 2500.0)] == ["1.2 ms", "74.8 us", "2.5 s"]
    assert [f["us"](v) for v in (74.8, 1500.0, 2.5e6)] == ["74.8 us", "1.5 ms", "2.5 s"]
    assert [f["s"](v) for v in (2.5, 0.0012)] == ["2.5 s", "1.2 ms"]
    assert [f["iterations"](v) for v in (16194.0, 12.5, 100.0)] == ["16,194", "12.5", "100"]


def test_each_aggregate_on_values_worked_out_by_hand():
    g = af.AGGREGATES
    s = pd.Series
    assert g["one"](s([7.0])) == 7.0
    assert math.isnan(g["one"](s([7.0, 7.0]))) and math.isnan(g["one"](s([], dtype=float)))
    assert g["median"](s([1.0, 10.0, 2.0])) == 2.0
    assert g["geomean"](s([0.0, -1.0, 2.0, 8.0])) == pytest.approx(4.0, rel=1e-15)
    assert g["geomean"](s([4.0, 9.0])) == pytest.approx(6.0, rel=1e-15)
    assert math.isnan(g["geomean"](s([0.0, -2.0])))
    assert isinstance(g["geomean"](s([4.0, 9.0])), float)
    assert g["sum"](s([1.5, 2.5, -1.0])) == 3.0
    assert g["min"](s([0.0, 3.0, 2.0, -1.0])) == 2.0
    assert g["min"](s([0.5, 3.0])) == 0.5 and g["geomean"](s([0.25, 4.0])) == 1.0   # positive, not above 1
    assert math.isnan(g["min"](s([0.0, -1.0])))
    assert g["max"](s([-3.0, -1.0])) == -1.0
    assert g["count"](s([1.0, math.nan, "", "a", 0.0])) == 3.0
    assert g["nunique"](s([1.0, 1.0, 2.0, math.nan])) == 2.0
    assert g["trues"](s(["True", "true", "TRUE", "1", "1.0", "0", False, True, math.nan, "yes"], dtype=object)) == 6.0
    for name in ("count", "nunique", "trues"):
        assert type(g[name](s(["a"]))) is float


# --- the keys a mark names -----------------------------------------------------------

T = pd.DataFrame({"model": ["m", "m", "n", "m"], "batch": [8, 16, 8, math.nan], "repeat": [0.0, 1.0, 0.0, 0.0],
                  "size": ["default", "default", "default", math.nan], "kernel": ["k1", "k2", "k1", "k1"],
                  "time_us": [10.0, 20.0, 40.0, 80.0], "bytes": [2.0, 4.0, 8.0, 0.0]})


def test_a_key_column_as_text_and_a_marks_key_as_the_same_text():
    assert list(af._text(T["batch"], "batch")) == ["8", "16", "8", ""]
    assert list(af._text(pd.Series(["8", "x", None]), "repeat")) == ["8", "", ""]
    assert list(af._text(T["size"], "size")) == ["default", "default", "default", ""]
    assert list(af._text(pd.Series([1.5, None], dtype=object), "model")) == ["1.5", ""]
    assert af._want("batch", 8) == "8" and af._want("batch", "16.0") == "16" and af._want("repeat", 1.0) == "1"
    assert af._want("model", 8.0) == "8.0" and af._want("model", "m") == "m"
    assert [af._want("model", v) for v in (None, math.nan, "")] == [None, None, None]
    assert af._want("batch", 0) == "0"


def test_a_mark_names_the_rows_of_each_key_it_holds_and_the_table_has():
    assert list(af.mask(T, {"model": "m"})) == [True, True, False, True]
    assert list(af.mask(T, {"model": "m", "batch": 8.0})) == [True, False, False, False]
    assert list(af.mask(T, {"model": "m", "batch": math.nan, "size": ""})) == [True, True, False, True]
    assert list(af.mask(T, {"kernel": "k1", "repeat": 0})) == [True, False, True, True]
    assert list(af.mask(T, {"model": "m", "variant": "compile"})) == [True, True, False, True]   # no such column
    assert list(af.mask(T, {})) == [True] * 4
    assert list(af.rows(T, {"model": "m", "batch": 16})["time_us"]) == [20.0]
    cache = {}
    assert list(af.mask(T, {"model": "n"}, cache)) == [False, False, True, False]
    assert set(cache) == {"model"} and list(cache["model"]) == ["m", "m", "n", "m"]
    cache["model"] = np.array(["n", "n", "n", "n"], dtype=object)   # the cache is read, not the table again
    assert list(af.mask(T, {"model": "n"}, cache)) == [True] * 4


def test_a_marks_value_recomputed_from_one_row_a_ratio_or_an_aggregate():
    t = {"kernels": T, "runs": None}
    assert af.recompute(t, {"quantity": "kernels.time_us", "model": "m", "batch": 16}) == (20.0, "1 row(s)")
    assert af.recompute(t, {"quantity": "kernels.time_us/bytes", "model": "m", "batch": 16}) == (5.0, "1 row(s)")
    assert af.recompute(t, {"quantity": "kernels.time_us", "model": "m", "agg": "sum"}) == (110.0, "3 row(s)")
    assert af.recompute(t, {"quantity": "kernels.time_us", "model": "m", "agg": math.nan})[1] == "3 row(s)"
    assert math.isnan(af.recompute(t, {"quantity": "kernels.time_us", "model": "m", "agg": ""})[0])   # one of 3
    assert af.recompute(t, {"quantity": "kernels.time_us/bytes", "model": "m", "agg": "sum"}) == (110.0 / 6.0,
                                                                                                 "3 row(s)")
    assert af.recompute(t, {"quantity": "kernels.kernel", "kernel": "k1", "agg": "count"}) == (3.0, "")
    assert af.recompute(t, {"quantity": "kernels.kernel", "agg": "nunique"}) == (2.0, "")
    assert af.recompute(t, {"quantity": "kernels.model", "agg": "trues"}) == (0.0, "")
    assert af.recompute(t, {"quantity": "runs.wall_ms"}) == (None, "no tables/runs.csv")
    assert af.recompute(t, {"quantity": "headline.speedup"}) == (None, "no tables/headline.csv")
    assert af.recompute(t, {"quantity": "kernels.time_us", "agg": "mean"}) == (
        None, "agg 'mean' is not one of one, median, geomean, sum, min, max, count, nunique, trues")
    assert af.recompute(t, {"quantity": "kernels.flops"}) == (None, "no column flops in tables/kernels.csv")
    assert af.recompute(t, {"quantity": "kernels.time_us/flops"}) == (None, "no column flops in tables/kernels.csv")
    # text in a number column read as missing, then left out (a ratio's denominator too)
    mixed = {"kernels": pd.DataFrame({"model": ["m", "m"], "time_us": ["5", "n/a"], "n": ["n/a", "2"]})}
    assert af.recompute(mixed, {"quantity": "kernels.time_us", "agg": "sum"}) == (5.0, "2 row(s)")
    assert af.recompute(mixed, {"quantity": "kernels.time_us"}) == (5.0, "2 row(s)")
    assert af.recompute(mixed, {"quantity": "kernels.time_us/n", "agg": "sum"}) == (2.5, "2 row(s)")
    # the table is the name before the first dot: a column's name may hold one
    dotted = {"kernels": pd.DataFrame({"dram.bytes": [4.0]})}
    assert af.recompute(dotted, {"quantity": "kernels.dram.bytes"}) == (4.0, "1 row(s)")
    caches = {}
    af.recompute(t, {"quantity": "kernels.time_us", "model": "n"}, caches)
    assert list(caches) == ["kernels"] and set(caches["kernels"]) == {"model"}


def test_a_marks_name_holds_its_keys_in_order():
    m = {"mark": "bar", "kernel": "k1", "batch": 8.0, "model": "m", "variant": math.nan, "size": None, "mode": "",
         "repeat": 2, "value": 3.0}
    assert af._name(m) == "m 8 2 k1"
    assert af._name({"batch": 0.5, "dtype": "float32"}) == "0.5 float32"


def test_a_figures_own_marks_as_a_table():
    marks = pd.DataFrame({"mark": ["box", "box", "total"], "model": ["m", "m", "m"], "repeat": [0, 1, 0],
                          "quantity": ["busy_ms", "busy_ms", "marks.busy_ms"], "value": [1.5, 2.5, 4.0],
                          "text": [None, None, "4 ms"]})
    own = af.own_marks(marks)
    assert list(own.columns) == ["model", "repeat", "busy_ms"]
    assert own["busy_ms"].tolist()[:2] == [1.5, 2.5] and math.isnan(own["busy_ms"].iloc[2])
    assert af.recompute({"marks": own}, {"quantity": "marks.busy_ms", "model": "m", "agg": "sum"}) == (4.0,
                                                                                                     "3 row(s)")
    assert af.own_marks(marks.drop(columns="value")).empty and af.own_marks(marks.drop(columns="quantity")).empty


# --- a figure's marks ----------------------------------------------------------------

def checked(marks: list[dict], t: dict, caption=None, caches=None) -> audit.Audit:
    a = audit.Audit()
    af.check_marks(a, pd.DataFrame(marks), t, caption, "figures/k/m", caches)
    return a


def test_a_marks_value_at_the_tolerance_agrees_and_past_it_not():
    t = {"kernels": T}
    base = {"mark": "bar", "quantity": "kernels.time_us", "model": "m", "batch": 16}
    a = checked([{**base, "value": 20.0 * (1 + 0.9e-6)}], t)
    assert (a.checks, a.violations) == (1, [])
    a = checked([{**base, "value": 20.0 * (1 + 1.1e-6)}], t)
    assert a.violations == ["figures/k/m bar m 16: draws kernels.time_us = 20, the record gives 20 (one of 1 row(s))"]
    a = checked([{**base, "value": 21.0, "agg": "median"}], t)
    assert a.violations == ["figures/k/m bar m 16: draws kernels.time_us = 21, the record gives 20 "
                            "(median of 1 row(s))"]
    a = checked([{**base, "quantity": "runs.wall_ms", "value": 1.0}], t)
    assert a.violations == ["figures/k/m bar m 16: draws runs.wall_ms = 1, the record gives no tables/runs.csv"]
    # no value, a quantity without a table, or none: not compared
    a = checked([{**base, "value": math.nan}, {**base, "quantity": "speedup", "value": 1.0},
                 {**base, "quantity": math.nan, "value": 1.0}], t)
    assert a.checks == 0


def test_a_labels_text_holds_its_value_in_its_format():
    t = {"kernels": T}
    base = {"mark": "label", "quantity": "kernels.time_us", "model": "m", "batch": 16, "value": 20.0}
    a = checked([{**base, "text": "took 20 us", "fmt": "us"}], t)   # fmt_time(0.02)
    assert (a.checks, a.violations) == (2, [])
    a = checked([{**base, "text": "20.0 us", "fmt": "us"}], t)
    assert a.violations == ["figures/k/m label m 16: label '20.0 us' does not say kernels.time_us = 20 ('20 us')"]
    a = checked([{**base, "text": "20", "fmt": "nope"}], t)
    assert a.violations == ["figures/k/m label m 16: label '20' does not say kernels.time_us = 20 (no format 'nope')"]
    a = checked([{**base, "text": "20", "fmt": math.nan}, {**base, "text": math.nan, "fmt": "g"},
                 {**base, "value": math.nan, "text": "20", "fmt": "g"}], t)
    assert a.checks == 2   # the two values compared, no label read


def test_a_caption_mark_is_a_number_the_caption_quotes():
    m = {"mark": "caption", "text": "1.50x", "quantity": math.nan, "value": math.nan}
    a = checked([m], {}, caption="the highest estimate is 1.50x")
    assert (a.checks, a.violations) == (1, [])
    a = checked([m], {}, caption="the highest estimate is 1.5x")
    assert a.violations == ["figures/k/m caption: the caption does not quote '1.50x'"]
    assert checked([m], {}, caption=None).checks == 0
    assert checked([{**m, "mark": "label"}], {}, caption="nothing").checks == 0


def test_marks_of_the_figures_own_marks_are_checked_against_them():
    marks = [{"mark": "box", "model": "m", "quantity": "busy_ms", "value": 1.5},
             {"mark": "box", "model": "m", "quantity": "busy_ms", "value": 2.5},
             {"mark": "total", "model": "m", "quantity": "marks.busy_ms", "agg": "sum", "value": 4.0}]
    stale = {"marks": {"model": np.array(["x", "x", "x"], dtype=object)}}   # a cache of another figure's marks
    a = checked(marks, {}, caches=stale)
    assert (a.checks, a.violations) == (1, [])
    a = checked([*marks[:2], {**marks[2], "value": 5.0}], {"marks": pd.DataFrame({"busy_ms": [5.0]})})
    assert a.violations == ["figures/k/m total m: draws marks.busy_ms = 5, the record gives 4 (sum of 3 row(s))"]
    # without a marks.* quantity the figure's marks are no table
    a = checked([{**marks[0], "quantity": "kernels.time_us"}], {"marks": T})
    assert a.violations == ["figures/k/m box m: draws kernels.time_us = 1.5, the record gives no tables/kernels.csv"]


# --- the tables of a results folder and its data files -------------------------------

def write(path: str, df: pd.DataFrame, gz: bool = False) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if gz:
        with gzip.open(path + ".gz", "wt") as f:
            df.to_csv(f, index=False)
    else:
        df.to_csv(path, index=False)


def test_load_reads_each_table_as_figures_read_it(tmp_path):
    res = str(tmp_path)
    runs = pd.DataFrame({"model": ["m", "m"], "batch": [8, 8], "status": ["ok", "oom"], "wall_ms": [1.0, 2.0]})
    write(f"{res}/tables/runs.csv", runs)
    write(f"{res}/tables/headline.csv", runs.assign(size=["hidden1", math.nan]), gz=True)
    write(f"{res}/tables/suite.csv", pd.DataFrame({"variant": ["compile"], "status": ["ok"]}))
    with open(f"{res}/tables/scaling.csv", "w") as f:
        f.write('a,b\n"1,2\n')   # an unterminated quote: unreadable
    t = af.load(res)
    assert set(t) == {*af.TABLES, "kernel_roofline"}
    assert t["runs"]["wall_ms"].tolist() == [1.0] and t["runs"]["size"].tolist() == ["default"]
    assert t["headline"]["status"].tolist() == ["ok", "oom"]                  # the headline's rows all kept
    assert t["headline"]["size"].tolist() == ["hidden1", "default"]           # read from the .gz
    assert "size" not in t["suite"] and len(t["suite"]) == 1                 # no model or batch: as written
    assert t["scaling"] is None and t["kernels"] is None and t["kernel_roofline"] is None
    kernels = pd.DataFrame({"model": ["m"], "batch": [8], "status": ["ok"], "name": ["k"], "time_us": [1.0]})
    write(f"{res}/tables/kernels.csv", kernels)
    write(f"{res}/tables/scaling.csv", pd.DataFrame({"model": ["m"], "batch": [8]}))   # no column but the keys
    t = af.load(res)
    assert t["scaling"]["size"].tolist() == ["default"]
    assert t["kernels"]["name"].tolist() == ["k"]
    assert list(t["kernel_roofline"].columns) == list(af.sweep_roofline.COLUMNS) and t["kernel_roofline"].empty


def test_read_prefers_the_plain_file_and_reads_none_that_is_not_there(tmp_path):
    p = str(tmp_path / "t.csv")
    assert af._read(p) is None
    write(p, pd.DataFrame({"a": [2]}), gz=True)
    assert af._read(p)["a"].tolist() == [2]
    write(p, pd.DataFrame({"a": [1]}))
    assert af._read(p)["a"].tolist() == [1]
    os.mkdir(str(tmp_path / "d.csv"))   # a folder: cannot be read as a table
    assert af._read(str(tmp_path / "d.csv")) is None


def data_file(tmp_path, marks: str | None, caption: str | None, png: bool = False) -> str:
    d = tmp_path / "figures" / "k"
    d.mkdir(parents=True, exist_ok=True)
    data = d / "m.data.csv"
    if marks is not None:
        data.write_text(marks)
    if caption is not None:
        (d / "m.rst").write_text(caption)
    if png:
        (d / "m.png").write_bytes(b"")
    return str(data)


def file_checked(tmp_path, data: str, t=None) -> audit.Audit:
    a = audit.Audit()
    af.check_file(a, data, t or {}, str(tmp_path))
    return a


def test_a_drawn_figure_with_an_empty_data_file_is_a_violation(tmp_path):
    for marks in ("", "mark,quantity,value\n"):
        data = data_file(tmp_path, marks, "Kernel time of m.")
        a = file_checked(tmp_path, data)
        assert (a.checks, a.violations) == (1, ["figures/k/m.data.csv: the figure is drawn but its data file "
                                                "holds no mark"])
        data = data_file(tmp_path, marks, "No data: m ran no kernel.")
        assert file_checked(tmp_path, data).violations == []


def test_a_figure_without_a_caption_is_drawn_where_its_image_is_and_no_no_data_mark(tmp_path):
    data = data_file(tmp_path, "mark,quantity,value\n", None)
    assert file_checked(tmp_path, data).violations == []                   # no image: not drawn
    data = data_file(tmp_path, "mark,quantity,value\n", None, png=True)
    assert file_checked(tmp_path, data).violations == ["figures/k/m.data.csv: the figure is drawn but its data "
                                                       "file holds no mark"]
    data = data_file(tmp_path, "mark,quantity,value,text\nno data,,,nothing ran\n", None, png=True)
    a = file_checked(tmp_path, data)
    assert (a.checks, a.violations) == (1, [])
    data = data_file(tmp_path, "mark,quantity,value,model\nbar,kernels.time_us,20,m\n", None, png=True)
    a = file_checked(tmp_path, data, {"kernels": T.iloc[[1]]})
    assert (a.checks, a.violations) == (2, [])


def test_an_empty_data_file_without_a_header_beside_an_image(tmp_path):
    data = data_file(tmp_path, "", None, png=True)
    assert file_checked(tmp_path, data).violations == ["figures/k/m.data.csv: the figure is drawn but its data "
                                                       "file holds no mark"]


def test_an_unreadable_caption_is_a_violation_and_its_figure_read_by_its_image(tmp_path):
    data = data_file(tmp_path, "mark,quantity,value\n", None, png=True)
    rst = data[:-len(".data.csv")] + ".rst"
    os.mkdir(rst)   # a folder where the caption is
    a = file_checked(tmp_path, data)
    assert len(a.violations) == 2 and a.violations[0].startswith(f"{rst}: cannot be read (")
    assert a.violations[1] == "figures/k/m.data.csv: the figure is drawn but its data file holds no mark"


def test_a_data_file_whose_name_cannot_be_opened_says_why_in_200_characters(tmp_path):
    data = str(tmp_path / "figures" / "k" / ("x" * 300 + ".data.csv"))   # a name past the file system's 255
    os.makedirs(os.path.dirname(data))
    a = file_checked(tmp_path, data)
    why = f"[Errno 36] File name too long: '{data}'"
    assert len(why) > 200
    assert a.violations == [f"figures/k/{'x' * 300}.data.csv: cannot be read (OSError: {why[:200]})"]


def test_an_unreadable_data_file_is_a_violation(tmp_path):
    data = data_file(tmp_path, None, "Kernel time of m.")
    os.mkdir(data)   # a folder where the data file is
    a = file_checked(tmp_path, data)
    assert len(a.violations) == 1 and a.violations[0].startswith("figures/k/m.data.csv: cannot be read (")
    assert a.checks == 1
    os.rmdir(data)
    data = data_file(tmp_path, 'mark,quantity\n"bar,x\n', "Kernel time of m.")
    a = file_checked(tmp_path, data)
    assert a.violations[0].startswith("figures/k/m.data.csv: cannot be read (ParserError: ")
    assert "\n" not in a.violations[0] and len(a.violations[0]) <= len("figures/k/m.data.csv: cannot be read (") \
        + len("ParserError: ") + 200 + 1


def test_the_caption_beside_a_data_file_is_the_one_its_marks_are_checked_against(tmp_path):
    data = data_file(tmp_path, "mark,quantity,value,text\ncaption,,,1.50x\n", "the highest is 1.50x")
    a = file_checked(tmp_path, data)
    assert (a.checks, a.violations) == (2, [])
    data = data_file(tmp_path, "mark,quantity,value,text\ncaption,,,1.50x\n", "the highest is 1.5x")
    assert file_checked(tmp_path, data).violations == ["figures/k/m.data.csv caption: the caption does not quote "
                                                       "'1.50x'"]


def test_check_reads_every_figures_data_file_of_a_results_folder(tmp_path):
    res = tmp_path
    write(f"{res}/tables/kernels.csv", pd.DataFrame({"model": ["m"], "batch": [8], "time_us": [20.0]}))
    for fig, value in (("a", 20.0), ("b", 21.0)):
        d = res / "figures" / fig
        d.mkdir(parents=True)
        (d / "m.data.csv").write_text(f"mark,quantity,value,model,batch\nbar,kernels.time_us,{value},m,8\n")
        (d / "m.rst").write_text("Kernel time.")
    (res / "figures" / "c.data.csv").write_text("mark,quantity,value\nbar,kernels.time_us,5\n")   # not a figure's
    a = audit.Audit()
    af.check(a, str(res))
    assert a.checks == 4
    assert a.violations == ["figures/b/m.data.csv bar m 8: draws kernels.time_us = 21, the record gives 20 "
                            "(one of 1 row(s))"]
