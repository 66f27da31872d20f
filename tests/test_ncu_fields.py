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
BASE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1, "nsecond": 1, "usecond": 1e3,
        "msecond": 1e6, "second": 1e9, "%": 1, "inst": 1}


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
                                {"byte": "Gbyte", "ns": "second"}])
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
    for got in rows:
        assert len(got) == len(work["kernels"])
        for g, k in zip(got, work["kernels"]):
            assert g["flops"] == pytest.approx(n * (2 if k["op"] == "fma" else 1), rel=1e-3), k
    for g, w in zip(rows[-1], expected(*base)):
        close(g, {c: v for c, v in w.items() if not c.endswith("_pct") and "_pct_" not in c}, "module")
