"""Inputs read whole are bounded (regular files, size and unpacked-size caps, nesting), and
records that parse but hold what no run writes become the run's error row naming the file."""
import gzip
import os

import pandas as pd
import pytest

from fusionlab.analysis.readers import torch_trace
from fusionlab.analysis.readers.trace import ReportError
from fusionlab.analysis.report import audit, audit_inputs
from fusionlab.analysis.run import run_metrics
from fusionlab.analysis.sweep import build, tables
from fusionlab.core import io
from fusionlab.plan import sweep

RUN = "runs/nsys/mlp/compile/inference_float32/bs8/r0"


@pytest.mark.parametrize("kind", ["dev zero", "fifo"])
def test_a_trace_that_is_no_regular_file_is_refused_at_once(tmp_path, kind):
    path = str(tmp_path / "trace.json")
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    with pytest.raises(ReportError, match="not a regular file"):
        torch_trace.load(path)


def test_a_gzip_bomb_is_refused_with_its_cap(tmp_path):
    path = tmp_path / "trace.json"
    with gzip.open(path, "wb") as f:
        f.write(b" " * (64 << 20))
    size = path.stat().st_size
    with pytest.raises(ReportError, match=f"over {max(1 << 20, 100 * size)} bytes"):
        torch_trace.load(str(path))


def test_deep_json_is_a_value_error_and_recorded_device_skips_it(tmp_path):
    d = tmp_path / RUN
    d.mkdir(parents=True)
    (d / "run.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested deeper"):
        io.load_json(str(d / "run.json"))
    assert sweep.recorded_device([str(d)]) is None


@pytest.mark.parametrize("text, said", [('{"model": "mlp", "batch": 1%s}' % ("0" * 400), "batch holds an integer of 401"),
                                        ('{"model": "mlp", "status": "ok", "timing": {"a_ms": NaN}}', "timing.a_ms"),
                                        ('{"a": ' * 100 + "1" + "}" * 100, "nested deeper"),
                                        ("[" * 100_000 + "]" * 100_000, "nested deeper")])
def test_an_absurd_run_json_is_an_error_row_naming_the_file(tmp_path, text, said):
    d = tmp_path / RUN
    d.mkdir(parents=True)
    (d / "run.json").write_text(text)
    row, _ = run_metrics.compute(str(d / "run.json"), None, "nsys")
    assert row["status"] == "error" and said in row["reason"] and str(d / "run.json") in row["reason"]
    assert row["batch"] == 8 and row["model"] == "mlp"           # from the folder's path


def test_an_absurd_metrics_json_is_an_error_row_and_the_tables_are_made(tmp_path):
    d = tmp_path / RUN
    d.mkdir(parents=True)
    (d / "metrics.json").write_text('{"model": "mlp", "batch": 1%s, "status": "ok"}' % ("0" * 400))
    row = tables.read_metrics(str(d / "metrics.json"))
    assert row["status"] == "error" and "batch" in row["reason"] and row["batch"] == 8


def test_tables_are_written_all_or_none(tmp_path):
    good = pd.DataFrame({"a": [1]})
    bad = pd.DataFrame({"a": [object()]})          # pyarrow refuses it
    (tmp_path / "one.csv").write_text("old\n")
    with pytest.raises(Exception):
        build.write_all([(good, str(tmp_path / "one.csv"), None),
                         (bad, str(tmp_path / "two.csv"), str(tmp_path / "two.parquet"))])
    assert (tmp_path / "one.csv").read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["one.csv"]


def test_the_audit_fails_on_a_missing_table_or_one_older_than_its_inputs(tmp_path):
    res = tmp_path / "res"
    (res / RUN).mkdir(parents=True)
    (res / "tables").mkdir()
    for name in ("runs.csv", "speedups.csv", "headline.csv"):
        (res / "tables" / name).write_text("x\n")
        os.utime(res / "tables" / name, (1e9, 1e9))
    (res / RUN / "metrics.json").write_text("{}")
    a = audit.Audit()
    audit_inputs.check(a, str(res))
    assert any("tables/runs.csv" in v and "older than its input " + RUN in v for v in a.violations)
    os.remove(res / "tables" / "speedups.csv")
    a = audit.Audit()
    audit_inputs.check(a, str(res))
    assert any("tables/speedups.csv" in v and "missing" in v for v in a.violations)
