"""The Nsight Compute reader field by field against ncu's own output, by Nsight Compute's
metric names: each column's expected value is read here from `ncu --import R --csv --page
raw` of the same real report (tests/data/ncu_h100), through this file's own table of metric
names, units and FLOP weights (never the reader's), for both ways in (the ncu_report
module, the CSV parser). The CSV parser also reads the same values printed in other units
than the base ones, and each FLOP pipe (fp64, fp32, fp16) with its weight.
Reports recorded in other units and with fp16 work: benchmarks/gpu/ncu_fixtures.py."""
import copy
import csv
import gzip
import io
import math
import os
import shutil

import pytest

from fusionlab.analysis.readers import ncu_report

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "ncu_h100")

# Nsight Compute's metric of each column (docs/ncu.md), written out here
EXPECTED = {
    "ncu_time_ns": "gpu__time_duration.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "l2_bytes": "lts__t_bytes.sum",
    "dram_pct_peak": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_pct_peak": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "local_load_bytes": "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "local_store_bytes": "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
}
# the roofline's FLOPs: add and mul count 1, fma 2, on the fp64 (d), fp32 (f) and fp16 (h) pipes
FLOP_WEIGHTS = {f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum": w
                for op, w in [("dadd", 1), ("dmul", 1), ("dfma", 2), ("fadd", 1), ("fmul", 1), ("ffma", 2),
                              ("hadd", 1), ("hmul", 1), ("hfma", 2)]}
# what one unit of each unit ncu prints is, in bytes, nanoseconds, percent, instructions
BASE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9,
        "ns": 1, "nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "us": 1e3, "ms": 1e6, "s": 1e9,
        "%": 1, "inst": 1}


def table(name):
    """(header, units, data rows) of the fixture's raw CSV."""
    with open(os.path.join(FIXTURE, f"{name}_raw.csv")) as f:
        lines = list(csv.reader(f))
    return lines[0], lines[1], lines[2:]


def as_text(header, units, rows) -> str:
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    w.writerows([header, units, *rows])
    return out.getvalue()


def expected(header, units, rows) -> list[dict]:
    """Each result's columns, by Nsight Compute's metric names and the printed units."""
    out = []
    for line in rows:
        rec, unit = dict(zip(header, line)), dict(zip(header, units))

        def value(metric):
            text = rec[metric].replace(",", "")
            return float(text) * BASE[unit[metric]]
        row = {col: value(m) for col, m in EXPECTED.items() if m in rec}
        if any(m in rec for m in FLOP_WEIGHTS):
            row["flops"] = sum(value(m) * w for m, w in FLOP_WEIGHTS.items() if m in rec)
        row["full_name"] = rec["Kernel Name"]
        out.append(row)
    return out


def close(got: dict, want: dict, what):
    for col, v in want.items():
        if col == "full_name":
            continue
        pct = col.endswith("_pct") or "_pct_" in col
        assert got[col] == pytest.approx(v, rel=1e-9, abs=0.006 if pct else 1e-9), (what, col, got[col], v)


def unpacked(name, tmp_path) -> str:
    out = tmp_path / f"{name}.ncu-rep"
    with gzip.open(os.path.join(FIXTURE, f"{name}.ncu-rep.gz")) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return str(out)


@pytest.mark.parametrize("name", ["oracle", "oracle_range"])
def test_the_csv_parser_reads_each_metric_by_its_name(name):
    header, units, rows = table(name)
    want = expected(header, units, rows)
    got = ncu_report.parse_raw_csv(as_text(header, units, rows))
    assert len(got) == len(want) > 0
    for i, (g, w) in enumerate(zip(got, want)):
        close(g, w, (name, i))
        assert g["full_name"] == w["full_name"] and g["id"] == i
    # the fixture tells read from write, and its kernels move bytes
    assert all(w["dram_read_bytes"] != w["dram_write_bytes"] for w in want)
    assert all(w["l2_bytes"] > 0 and w["ncu_time_ns"] > 0 for w in want)


@pytest.mark.skipif(not ncu_report.available(), reason=ncu_report.MISSING_MODULE)
@pytest.mark.parametrize("name", ["oracle", "oracle_range"])
def test_the_module_reads_what_ncu_prints(name, tmp_path):
    header, units, rows = table(name)
    want = expected(header, units, rows)
    got = ncu_report.load(unpacked(name, tmp_path))
    assert len(got) == len(want) > 0
    for i, (g, w) in enumerate(zip(got, want)):
        # the CSV rounds percentages to 2 decimals, other values are printed whole
        for col, v in w.items():
            if col == "full_name":
                continue
            pct = col.endswith("_pct") or "_pct_" in col
            assert g[col] == pytest.approx(v, rel=1e-9, abs=0.006 if pct else 0.5), (name, i, col)
        assert g["id"] == i


def _rescaled(header, units, rows, to: dict):
    """The table with each metric of a base unit in `to` printed in the other unit instead,
    as ncu does without --print-units base (values divided by the unit's size)."""
    units, rows = list(units), copy.deepcopy(rows)
    for j, u in enumerate(units):
        if u in to:
            units[j] = to[u]
            for line in rows:
                text = line[j].replace(",", "")
                if text and text != "n/a":
                    line[j] = repr(float(text) / BASE[to[u]])
    return header, units, rows


@pytest.mark.parametrize("to", [{"byte": "Kbyte", "ns": "usecond"}, {"byte": "Mbyte", "ns": "msecond"},
                                {"byte": "Gbyte", "ns": "second"}, {"ns": "nsecond"}, {"byte": "KB", "ns": "us"},
                                {"byte": "MB", "ns": "ms"}, {"byte": "GB", "ns": "s"}, {"byte": "B"}])
def test_the_csv_parser_reads_other_units(to):
    header, units, rows = table("oracle")
    want = expected(header, units, rows)
    got = ncu_report.parse_raw_csv(as_text(*_rescaled(header, units, rows, to)))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        close(g, w, (to, i))


@pytest.mark.parametrize("metric", sorted(FLOP_WEIGHTS))
def test_each_flop_pipe_counts_with_its_weight(metric):
    # one FLOP metric at 1000 instructions, every other at 0: the fp16 pipe counts as the others do
    header, units, rows = table("oracle")
    rows = copy.deepcopy(rows[:1])
    for j, h in enumerate(header):
        if h in FLOP_WEIGHTS:
            rows[0][j] = "1,000" if h == metric else "0"
    got = ncu_report.parse_raw_csv(as_text(header, units, rows))
    assert got[0]["flops"] == FLOP_WEIGHTS[metric] * 1000


def test_a_metric_the_report_lacks_is_empty():
    header, units, rows = table("oracle")
    keep = [j for j, h in enumerate(header) if h != "dram__bytes_write.sum"]
    pick = lambda line: [line[j] for j in keep]   # noqa: E731
    got = ncu_report.parse_raw_csv(as_text(pick(header), pick(units), [pick(r) for r in rows]))
    assert all(math.isnan(g["dram_write_bytes"]) for g in got)
    assert [g["dram_read_bytes"] for g in got] == [w["dram_read_bytes"] for w in expected(header, units, rows)]


# ---- reports of known work, in ncu's own units (benchmarks/gpu/ncu_fixtures.py) -------------

KNOWN = os.path.join(os.path.dirname(FIXTURE), "ncu_h100_fp16")
needs_known = pytest.mark.skipif(not os.path.exists(os.path.join(KNOWN, "work.json")),
                                 reason="no fixture of known work: python benchmarks/gpu/ncu_fixtures.py on a GPU")


def known_table(name):
    with open(os.path.join(KNOWN, name)) as f:
        lines = [line for line in csv.reader(f) if line and not line[0].startswith("==")]
    return lines[0], lines[1], lines[2:]


@needs_known
def test_ncus_own_units_read_as_its_base_units():
    base, auto = known_table("fixture_raw.csv"), known_table("fixture_raw_auto.csv")
    want, printed = expected(*base), expected(*auto)
    got = ncu_report.parse_raw_csv(as_text(*auto))
    assert len(got) == len(want) == len(printed) > 0
    for i, (g, w, p) in enumerate(zip(got, want, printed)):
        close(g, p, ("auto", i))                     # the parser reads the units ncu printed
        for col, v in w.items():                     # which are the base values, to ncu's rounding
            if col != "full_name":
                assert g[col] == pytest.approx(v, rel=5e-3, abs=0.006), (i, col)


@needs_known
def test_the_flops_of_known_work(tmp_path):
    import json
    with open(os.path.join(KNOWN, "work.json")) as f:
        work = json.load(f)
    with gzip.open(os.path.join(KNOWN, "fixture.ncu-rep.gz")) as src, open(tmp_path / "f.ncu-rep", "wb") as dst:
        shutil.copyfileobj(src, dst)
    base = known_table("fixture_raw.csv")
    rows = [ncu_report.parse_raw_csv(as_text(*base))]
    if ncu_report.available():
        rows.append(ncu_report.load(str(tmp_path / "f.ncu-rep")))
    n = work["elements"]
    for got in rows:   # the workload's kernels; its inputs' torch.randn kernels ran in the range too
        got = [g for g in got if g["name"] in ("fma_kernel", "add_kernel")]
        assert len(got) == len(work["kernels"])
        for g, k in zip(got, work["kernels"]):
            # Nsight Compute counts thread instructions: a packed half2 instruction (HFMA2,
            # HADD2: two fp16 lanes) counts once, so fp16 work reads as at most half its
            # arithmetic FLOPs (measured on an H100: N fp16 fmas -> N, not 2N)
            arithmetic = n * (2 if k["op"] == "fma" else 1)
            if k["dtype"] == "float32":
                assert g["flops"] == pytest.approx(arithmetic, rel=1e-3), k
            elif k["op"] == "fma":
                assert g["flops"] == pytest.approx(arithmetic / 2, rel=1e-3), k
            else:
                assert arithmetic / 2 <= g["flops"] <= arithmetic, k
    for g, w in zip(rows[-1], expected(*base)):
        close(g, {c: v for c, v in w.items() if not c.endswith("_pct") and "_pct_" not in c}, "module")


# ---- the reader's other ways in and its edges --------------------------------------------------

def test_the_csv_without_a_units_row_or_with_ncus_own_lines():
    header, units, rows = table("oracle")
    want = expected(header, units, rows)
    text = "==PROF== Disconnected from process 1\n" + as_text(header, units, rows)
    assert [g["dram_read_bytes"] for g in ncu_report.parse_raw_csv(text)] == [w["dram_read_bytes"] for w in want]
    # no units row (the first row has an ID): base units taken
    got = ncu_report.parse_raw_csv(as_text(header, [r for r in rows[0]], rows[1:]))
    assert [g["dram_read_bytes"] for g in got] == [w["dram_read_bytes"] for w in want]
    assert ncu_report.parse_raw_csv("") == [] and ncu_report.parse_raw_csv(as_text(header, [], [])[:-1]) == []
    # an unknown unit is no number
    bad = [("Tbyte" if h == "dram__bytes_read.sum" else u) for h, u in zip(header, units)]
    assert all(math.isnan(g["dram_read_bytes"]) for g in ncu_report.parse_raw_csv(as_text(header, bad, rows)))


def test_the_name_is_the_function_of_the_demangled_kernel_name():
    header, units, rows = table("oracle")
    j = header.index("Kernel Name")
    row = list(rows[0])
    row[j] = "void vectorized_elementwise_kernel<4, Mul<float>>(int, T2)"
    got = ncu_report.parse_raw_csv(as_text(header, units, [row]))[0]
    assert got["name"] == "vectorized_elementwise_kernel" and got["full_name"] == row[j]
    renamed = ["Function Name" if h == "Kernel Name" else h for h in header]
    assert ncu_report.parse_raw_csv(as_text(renamed, units, [row]))[0]["name"] == "vectorized_elementwise_kernel"
    row[j] = ""
    assert ncu_report.parse_raw_csv(as_text(header, units, [row]))[0]["name"] == ""


def test_kernel_key_drops_scopes_casts_and_spaces():
    assert ncu_report.kernel_key("void at::native::k<(int)4, (unsigned int)2>(a::B &)") == "voidk<4,2>(B&)"
    assert ncu_report.kernel_key("f<(long long)1, (bool)1, (char)0, (short)3, (signed char)2>") == "f<1,1,0,3,2>"
    assert ncu_report.kernel_key(None) is None


def test_passes_reads_the_most_passes_of_a_log():
    assert ncu_report.passes("==PROF== Profiling \"k\" - 0: 0%....50%....100% - 1 pass\n"
                             "==PROF== Profiling \"k\" - 1: 0%....50%....100% - 12 passes") == 12
    assert ncu_report.passes("- 3 passengers") is None and ncu_report.passes(None) is None


def test_read_takes_the_module_else_ncu(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(ncu_report, "load", lambda p: calls.append(("module", p)) or [])
    monkeypatch.setattr(ncu_report, "load_csv", lambda p, ncu: calls.append(("csv", p, ncu)) or [])
    monkeypatch.setattr(ncu_report, "available", lambda: True)
    monkeypatch.setattr(ncu_report, "ncu_path", lambda: "/opt/ncu")
    ncu_report.read("r.ncu-rep")
    monkeypatch.setattr(ncu_report, "available", lambda: False)
    ncu_report.read("r.ncu-rep")
    monkeypatch.setattr(ncu_report, "ncu_path", lambda: None)
    ncu_report.read("r.ncu-rep")                 # neither: the module's one-line error
    assert calls == [("module", "r.ncu-rep"), ("csv", "r.ncu-rep", "/opt/ncu"), ("module", "r.ncu-rep")]
    assert ncu_report.readable() is False


def test_ncu_path_and_readable(monkeypatch):
    monkeypatch.setattr(ncu_report.shutil, "which", lambda name: "/x/bin/ncu" if name == "ncu" else None)
    assert ncu_report.ncu_path() == "/x/bin/ncu"
    monkeypatch.setattr(ncu_report.shutil, "which", lambda name: None)
    monkeypatch.setattr(ncu_report.os.path, "exists", lambda p: p == "/usr/local/cuda/bin/ncu")
    assert ncu_report.ncu_path() == "/usr/local/cuda/bin/ncu"
    monkeypatch.setattr(ncu_report.os.path, "exists", lambda p: False)
    assert ncu_report.ncu_path() is None
    monkeypatch.setattr(ncu_report, "available", lambda: False)
    assert ncu_report.readable() is False


def test_load_csv_asks_ncu_for_the_raw_page_in_base_units(monkeypatch):
    import subprocess
    seen = {}
    header, units, rows = table("oracle")

    def fake_run(cmd, **kw):
        seen["cmd"], seen["kw"] = cmd, kw
        return subprocess.CompletedProcess(cmd, 0, stdout=as_text(header, units, rows), stderr="")
    monkeypatch.setattr(ncu_report.subprocess, "run", fake_run)
    got = ncu_report.load_csv("r.ncu-rep", "/opt/ncu", timeout=7)
    assert seen["cmd"] == ["/opt/ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw", "--print-kernel-base",
                           "demangled", "--print-units", "base"]
    assert seen["kw"]["timeout"] == 7 and seen["kw"]["check"] is True and seen["kw"]["text"] is True
    assert len(got) == len(rows)

    def failing(cmd, **kw):
        raise subprocess.CalledProcessError(1, cmd)
    monkeypatch.setattr(ncu_report.subprocess, "run", failing)
    with pytest.raises(ncu_report.NcuReportError, match=r"^r.ncu-rep: ncu --import failed"):
        ncu_report.load_csv("r.ncu-rep", "/opt/ncu")


def test_without_the_module_a_one_line_error(monkeypatch, tmp_path):
    import builtins
    real = builtins.__import__

    def no_module(name, *a, **k):
        if name == "ncu_report":
            raise ImportError(name)
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_module)
    assert ncu_report.available() is False
    with pytest.raises(ncu_report.NcuReportError, match="ncu-report"):
        ncu_report.load(str(tmp_path / "r.ncu-rep"))


@pytest.mark.skipif(not ncu_report.available(), reason=ncu_report.MISSING_MODULE)
def test_a_missing_report_is_a_one_line_error(tmp_path):
    with pytest.raises(ncu_report.NcuReportError, match=r"gone.ncu-rep: cannot load \("):
        ncu_report.load(str(tmp_path / "gone.ncu-rep"))


def test_a_metric_the_module_lacks_or_cannot_read_is_nan():
    class Metric:
        def __init__(self, v):
            self.v = v

        def as_double(self):
            if isinstance(self.v, Exception):
                raise self.v
            return self.v

    class Action:
        def metric_by_name(self, m):
            return {"a": Metric(2.5), "b": Metric(TypeError("a string metric"))}.get(m)
    assert ncu_report._value(Action(), "a") == 2.5
    assert math.isnan(ncu_report._value(Action(), "b")) and math.isnan(ncu_report._value(Action(), "c"))
    # a row: the columns, and flops only where some FLOP metric is known
    row = ncu_report._row(3, "k", "void k()", {"dram__bytes_read.sum": 5.0})
    assert row["id"] == 3 and row["name"] == "k" and row["dram_read_bytes"] == 5.0 and math.isnan(row["flops"])
    half = ncu_report._row(0, "k", "k", {"smsp__sass_thread_inst_executed_op_hfma_pred_on.sum": 4.0})
    assert half["flops"] == 8.0
