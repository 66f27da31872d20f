"""The metrics implementation (analysis.run.stream, the only one the package has) against
the pandas oracle (metrics_oracle.py over nsys_sqlite.load's Trace; the `nsys stats`
oracles in test_nsys_reader.py and test_train_fixture.py check both) and against plain
SQL: every metric and every kernel table, exactly, on every real fixture, for a streamed
export and for a Trace (nsys exports loaded in memory, torch.profiler traces); on
overlapping instances; across chunk edges. Every test runs with both readers of the
export's big tables: the columnar one (nsys_arrow, ADBC's SQLite driver) and sqlite3
(SQLite's own join and sort)."""
import math
import os
import shutil
import sqlite3
import sys

import numpy as np
import pandas as pd
import pytest

import metrics_oracle
from conftest import DATA, ROOT

from fusionlab.analysis.run import fields, hist, metrics, run_metrics, stream
from fusionlab.analysis.readers import nsys_arrow, nsys_sqlite, torch_trace

from fusionlab.bench import million_kernels, synthetic_export

FIXTURES = ["nsys2025_h200/mlp_eager", "nsys2025_h200/mlp_compile", "nsys2025_h200/pointwise_heavy_eager",
            "nsys2025_h200/pointwise_heavy_compile", "nsys2025_h100_train/deep_gelu_mlp_eager",
            "nsys2025_h100_train/deep_gelu_mlp_compile_reduce_overhead", "nsys2022_cpu/mlp_eager"]


@pytest.fixture(autouse=True, params=["columnar", "sqlite3"])
def reader(request, monkeypatch):
    """Which reader nsys_sqlite.Report uses for kernels and launch calls."""
    if request.param == "sqlite3":
        monkeypatch.setenv("FUSIONLAB_SQLITE_READER", "sqlite3")
    elif not nsys_arrow.available():
        pytest.skip("adbc-driver-sqlite is not installed: the columnar reader is off")
    return request.param


# tests that read no nsys export through nsys_sqlite.Report run under one reader
ONE_READER = pytest.mark.parametrize("reader", ["columnar"], indirect=True)


def test_report_uses_the_reader_asked_for(report, reader):
    assert nsys_sqlite.scan(report("nsys2025_h200/mlp_eager")).columnar is (reader == "columnar")


def test_columnar_join_keeps_first_launch_drops_orphans_and_orders_ties(tmp_path):
    """nsys_arrow.joined_kernels on a plain table (not an nsys export): kernels without a
    launch call dropped, the first launch call of an id used, and rows of equal (start,
    end) across a batch edge put in launch-start order."""
    pytest.importorskip("adbc_driver_sqlite.dbapi")   # installed: it runs under either reader
    db = str(tmp_path / "k.sqlite")
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE k (start INTEGER, end INTEGER, corr INTEGER, name INTEGER)")
    # (start, end, corr, name): three kernels share (10, 20), launched at 5, 3 and 4
    con.executemany("INSERT INTO k VALUES (?, ?, ?, ?)",
                    [(1, 2, 1, 100), (10, 20, 2, 101), (10, 20, 3, 102), (10, 20, 4, 103), (30, 40, 99, 104),
                     (50, 60, 5, 105), (50, 61, nsys_arrow.MISSING, 106)])
    con.commit()
    con.close()
    # launch calls: id, start, end, tid; id 2 twice (the first in file order counts), none for 99
    calls = np.array([[1, 0, 1, 7], [3, 3, 4, 7], [2, 5, 6, 8], [2, 0, 9, 9], [4, 4, 5, 7], [5, 45, 46, 7],
                      [nsys_arrow.MISSING, 1, 2, 7]], dtype=np.int64)
    join = nsys_arrow.first_launches(calls)
    assert join[:, 0].tolist() == [1, 2, 3, 4, 5] and join[1].tolist() == [2, 5, 6, 8]
    got = np.concatenate(list(nsys_arrow.joined_kernels(
        db, "SELECT start, end, corr, name FROM k ORDER BY start, end", join, chunk=2)))
    assert got.tolist() == [[1, 2, 0, 1, 7, 100], [10, 20, 3, 4, 7, 102], [10, 20, 4, 5, 7, 103],
                            [10, 20, 5, 6, 8, 101], [50, 60, 45, 46, 7, 105]]


def both_paths(path: str):
    """(oracle, streamed) views of every range and both attributions, with the kernel table
    of every range and attribution; the package's views of the loaded Trace equal the
    oracle's too."""
    trace, report = nsys_sqlite.load(path), nsys_sqlite.scan(path)
    assert (trace.device, trace.tool_version, trace.gpu, trace.gpus) == \
        (report.device, report.tool_version, report.gpu, report.gpus)
    pd.testing.assert_frame_equal(trace.ranges, report.ranges)
    keys = metrics.range_keys(trace)
    tables = [(n, d, a) for n, d in keys for a in metrics.ATTRIBUTIONS]
    old = metrics_oracle.views(trace, keys, metrics.ATTRIBUTIONS, tables)
    assert_same(old, metrics.views(trace, keys, metrics.ATTRIBUTIONS, tables))
    return old, metrics.views(report, keys, metrics.ATTRIBUTIONS, tables)


def assert_same(old, new):
    """Every metric equal (same keys in the same order, the same floats to the bit) and
    every kernel table equal, row order included."""
    assert list(old[0]) == list(new[0])
    for key, views in old[0].items():
        for a, m in views.items():
            n = new[0][key][a]
            assert list(m) == list(n), (key, a)
            for f, v in m.items():
                assert v == n[f] or (isinstance(v, float) and math.isnan(v) and math.isnan(n[f])), (key, a, f, v, n[f])
            assert metrics.clean(m) == metrics.clean(n)
    assert list(old[1]) == list(new[1])
    for key, table in old[1].items():
        pd.testing.assert_frame_equal(table.reset_index(drop=True), new[1][key].reset_index(drop=True),
                                      check_exact=True, check_dtype=not table.empty)


@pytest.mark.parametrize("name", FIXTURES)
def test_streamed_equals_pandas_on_every_fixture(report, name):
    old, new = both_paths(report(name))
    assert_same(old, new)
    assert any(m["process"].get("kernels") for m in new[0].values()) or name.startswith("nsys2022_cpu")


@pytest.mark.parametrize("name", ["torch_cpu/mlp_compile", "torch_cpu/pointwise_heavy_eager"])
@ONE_READER
def test_trace_equals_oracle_on_torch_fixtures(name):
    """A torch.profiler trace (a Trace, read through trace.Chunks): the package's metrics
    and kernel tables = the pandas oracle's, exactly."""
    trace = torch_trace.load(os.path.join(DATA, name, "trace.json"))
    keys = metrics.range_keys(trace)
    tables = [(n, d, a) for n, d in keys for a in metrics.ATTRIBUTIONS]
    new = metrics.views(trace, keys, metrics.ATTRIBUTIONS, tables)
    assert_same(metrics_oracle.views(trace, keys, metrics.ATTRIBUTIONS, tables), new)
    assert new[0]["fusionlab:measure"]["process"]["kernels"] > 0


@pytest.mark.parametrize("name", FIXTURES)
def test_streamed_counts_equal_plain_sql(report, name):
    """Per fusionlab range and attribution, kernels and summed kernel ns: a plain SQL query
    over the export (benchmarks/million_kernels.py's oracle) = the streamed analysis."""
    path = report(name)
    sql = million_kernels.oracle(path)
    got, _ = metrics.views(nsys_sqlite.scan(path))
    for rname, views in sql["ranges"].items():
        for a, (count, ns) in views.items():
            m = got[f"fusionlab:{rname}"][a]
            assert (m["kernels"], round(m["kernel_time_ms"] * 1e6)) == (count, ns), (rname, a)
    assert got["fusionlab:measure"]["process"]["iterations"] == sql["iterations_in_measure"]


def add_ranges(path: str, rows) -> None:
    """Add NVTX push/pop ranges (name, start, end, globalTid) to an export, in the fixture's
    domain (domainId 1, named by text as nsys writes unregistered strings)."""
    con = sqlite3.connect(path)
    con.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                    "VALUES (?, ?, 59, ?, ?, 1)", [(s, e, n, t) for n, s, e, t in rows])
    con.commit()
    con.close()


def test_overlapping_instances_and_chunk_edges(report, monkeypatch, tmp_path):
    """Instances of one name that overlap or nest (several layers), a range on autograd's
    thread, and chunks of 7 rows, so that running state crosses chunk edges."""
    path = str(tmp_path / "overlap.sqlite")
    shutil.copy(report("nsys2025_h100_train/deep_gelu_mlp_eager"), path)
    con = sqlite3.connect(path)
    its = con.execute("SELECT e.start, e.end, e.globalTid FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
                      "WHERE s.value = 'iteration' ORDER BY e.start").fetchall()
    other = con.execute("SELECT DISTINCT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid != ?",
                        (its[0][2],)).fetchone()[0]
    con.close()
    (s0, e0, tid), (s1, e1, _), (s2, e2, _), (s3, e3, _) = its[:4]
    add_ranges(path, [("iteration", s1, e2, tid),                   # overlaps two iterations
                      ("span", s0, e2, tid), ("span", s1, e3, tid),  # overlapping
                      ("span", (s1 + e1) // 2, e1, tid),             # nested in both
                      ("span", s2, e3, other),                       # autograd's thread
                      ("empty", e3 + 1, e3 + 2, tid)])               # no kernels
    monkeypatch.setattr(nsys_sqlite, "CHUNK", 7)
    old, new = both_paths(path)
    assert_same(old, new)
    assert len(stream.Target(fields.instances(nsys_sqlite.scan(path), "span", "fusionlab"), ["process"], []).layers) == 3
    assert new[0]["fusionlab:span"]["process"]["kernels"] > new[0]["fusionlab:span"]["same_thread"]["kernels"] > 0


def test_launch_resources_both_paths_and_without_columns(report, monkeypatch, tmp_path):
    """Each kernel's launch resources and occupancy (metrics.launch_configs): the same on
    both paths, in chunks of 5 rows (per-configuration sums cross chunk edges); an export
    without some columns (an older nsys: no localMemoryPerThread, blockZ, maxBlocksPerSm)
    gives NA there and no occupancy, never an error."""
    monkeypatch.setattr(nsys_sqlite, "CHUNK", 5)
    path = report("nsys2025_h100_train/deep_gelu_mlp_compile_reduce_overhead")
    table = [("measure", "fusionlab", "process")]
    old = metrics_oracle.views(nsys_sqlite.load(path), [], (), table)[1][table[0]]
    new = metrics.views(nsys_sqlite.scan(path), [], (), table)[1][table[0]]
    pd.testing.assert_frame_equal(old, new, check_exact=True)
    assert new[metrics.RESOURCE_TABLE_COLUMNS].notna().all().all()
    assert new["theoretical_occupancy"].between(0, 1).all()
    cut = str(tmp_path / "older.sqlite")
    shutil.copy(path, cut)
    con = sqlite3.connect(cut)
    for table_name, col in (("CUPTI_ACTIVITY_KIND_KERNEL", "localMemoryPerThread"),
                            ("CUPTI_ACTIVITY_KIND_KERNEL", "blockZ"), ("TARGET_INFO_GPU", "maxBlocksPerSm")):
        con.execute(f"ALTER TABLE {table_name} DROP COLUMN {col}")
    con.commit()
    con.close()
    old = metrics_oracle.views(nsys_sqlite.load(cut), [], (), table)[1][table[0]]
    got = metrics.views(nsys_sqlite.scan(cut), [], (), table)[1][table[0]]
    pd.testing.assert_frame_equal(old, got, check_exact=True)
    assert got["local_mem_per_thread_bytes"].isna().all() and got["block_threads"].isna().all()
    assert got["theoretical_occupancy"].isna().all() and got["occupancy_limited_by"].isna().all()
    assert (got["registers_per_thread"] == new["registers_per_thread"]).all()
    pd.testing.assert_frame_equal(got.drop(columns=metrics.RESOURCE_TABLE_COLUMNS),
                                  new.drop(columns=metrics.RESOURCE_TABLE_COLUMNS), check_exact=True)


def test_synthetic_report_streamed_equals_pandas(tmp_path, monkeypatch):
    """benchmarks/million_kernels.py's synthetic export (nsys's schema, two launching
    threads) at 20,000 kernels: the streamed analysis = the pandas oracle, in chunks of 1000."""
    path = str(tmp_path / "synthetic.sqlite")
    info = synthetic_export.synthetic(path, 20_000, 20)
    assert info["kernels"] == 20_014
    monkeypatch.setattr(nsys_sqlite, "CHUNK", 1000)
    old, new = both_paths(path)
    assert_same(old, new)
    m = new[0]["fusionlab:measure"]
    assert (m["process"]["kernels"], m["same_thread"]["kernels"], m["process"]["iterations"]) == (20_000, 8_000, 20)


@ONE_READER
def test_measure_check_on_synthetic(tmp_path):
    """`million_kernels.py measure --check --pandas`: the timing table and the SQL oracle."""
    path = str(tmp_path / "s.sqlite")
    synthetic_export.synthetic(path, 5_000, 10)
    assert million_kernels.main(["measure", path, "--check", "--pandas", "--out", str(tmp_path / "m")]) == 0
    table = pd.read_csv(tmp_path / "m" / "measure.csv")
    assert list(table["tool"][:2]) == ["fusionlab analyse", "in-memory path (load, then metrics)"]
    assert (table["rc"][:2] == 0).all() and (table["wall_s"][:2] > 0).all() and (table["peak_rss_mb"][:2] > 0).all()


@ONE_READER
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 10, 11, 99, 1000, 1001])
def test_histogram_order_statistics_are_numpys(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        x = rng.integers(-3000, 10**6, n) if n % 2 else rng.integers(0, 50, n)
        h = hist.Hist()
        for part in np.array_split(x, 3):
            h.add(part)
        assert hist.median(h) == float(np.median(x))
        for q in (10, 90, 25, 50, 99):
            assert hist.percentile(h, q) == float(np.percentile(x, q))
        assert hist.median(h, 1e3) == pd.Series(x / 1e3).median()


def test_pipeline_never_loads_every_row(report, monkeypatch):
    """run_metrics and analyse stream the export: nsys_sqlite.load (every kernel in pandas)
    is never called."""
    from fusionlab.analysis.__main__ import analyse
    d = os.path.join(ROOT, "tests", "data", "nsys2025_h100_train", "deep_gelu_mlp_eager")
    path = report("nsys2025_h100_train/deep_gelu_mlp_eager")
    monkeypatch.setattr(nsys_sqlite, "load", lambda p: pytest.fail("materialised every kernel"))
    row, kernels = run_metrics.compute(os.path.join(d, "run.json"), path, "nsys", os.path.join(d, "timing.json"))
    assert row["status"] == "ok" and row["kernels"] == 170 and int(kernels["calls"].sum()) == 170
    assert analyse(path)["ranges"]["fusionlab:measure"]["same_thread"]["kernels"] == 55


def test_kernel_file_capped_with_a_note(report, monkeypatch):
    d = os.path.join(ROOT, "tests", "data", "nsys2025_h100_train", "deep_gelu_mlp_eager")
    path = report("nsys2025_h100_train/deep_gelu_mlp_eager")
    row, full = run_metrics.compute(os.path.join(d, "run.json"), path, "nsys", os.path.join(d, "timing.json"))
    assert "kernels_csv_note" not in row
    monkeypatch.setattr(run_metrics, "KERNEL_ROWS", 3)
    row, kernels = run_metrics.compute(os.path.join(d, "run.json"), path, "nsys", os.path.join(d, "timing.json"))
    assert len(kernels) == 3 and list(kernels["full_name"]) == list(full["full_name"][:3])
    assert row["kernels_csv_note"] == f"kernels.csv keeps the 3 kernels with the most GPU time of {len(full)} distinct kernels"


@ONE_READER
def test_segmented_running_max_both_ways():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 10**6, 500)
    first = rng.random(500) < 0.1
    first[0] = True
    want = np.concatenate([np.maximum.accumulate(seg) for seg in np.split(x, np.flatnonzero(first)[1:])])
    assert (stream._segmented_cummax(x, first) == want).all()
    huge = x + (2 ** 60) * (np.arange(500) % 2)          # too wide to lift: the loop
    want = np.concatenate([np.maximum.accumulate(seg) for seg in np.split(huge, np.flatnonzero(first)[1:])])
    assert (stream._segmented_cummax(huge, first) == want).all()


@ONE_READER
def test_generate_workload_on_cpu_and_without_nsys(tmp_path, monkeypatch):
    """`generate`'s traced process launches every kernel (here as CPU ops, from both
    threads); without nsys on PATH, generate stops with a clear message."""
    import json
    import subprocess
    p = subprocess.run([sys.executable, "-m", "fusionlab.bench.million_kernels", "workload",
                        "--kernels", "1000", "--ranges", "10", "--device", "cpu"],
                       capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout.splitlines()[-1])["x"] == 100 + 1000     # warm-up + measured
    monkeypatch.setattr(million_kernels.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="nsys is not on PATH"):
        million_kernels.main(["generate", "--out", str(tmp_path)])
