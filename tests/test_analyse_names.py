"""Range names reach JSON and CSV whole, however long, on real profiles with long names
(tests/data/foreign/long_names.py: two names alike in their first 62 characters, one of
194): a torch.profiler trace recorded on the CPU, and an nsys report recorded on the GPU
machine (benchmarks/gpu/analyse_fixtures.sh; skipped until its file is in tests/data)."""
import gzip
import io
import json
import os
import sqlite3

import pandas as pd
import pytest

from conftest import DATA

from fusionlab.analysis import __main__ as cli
from fusionlab.analysis import terminal

WHOLE = "(whole report)"
TORCH_CPU = os.path.join(DATA, "foreign", "torch_cpu_long_names", "worker0.pt.trace.json.gz")
NSYS = "foreign/nsys2025_h100_long_names"
NSYS_FILE = os.path.join(DATA, NSYS, "report.sqlite.gz")


def _torch_names(path: str) -> set[str]:
    """The trace's record_function annotations, read from its JSON."""
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    return {e["name"] for e in events if e.get("cat") == "user_annotation"}


def _nvtx_names(path: str) -> set[str]:
    """The export's NVTX push/pop and start/end range names, by SQL."""
    con = sqlite3.connect(path)
    rows = con.execute("SELECT DISTINCT coalesce(e.text, s.value) FROM NVTX_EVENTS e "
                       "LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType IN (59, 60)").fetchall()
    con.close()
    return {r[0] for r in rows}


@pytest.fixture
def run(capsys):
    def go(*args):
        rc = cli.main(list(args))
        assert rc == 0
        return capsys.readouterr().out
    return go


def _names_whole(path: str, names: set[str], run) -> None:
    assert max(map(len, names)) == 194 and len({n[:62] for n in names}) < len(names)
    doc = json.loads(run(path, "--json"))
    assert set(doc["ranges"]) - {WHOLE} == names
    assert {m["range"] for k, v in doc["ranges"].items() if k != WHOLE for m in v.values()} == names
    rows = pd.read_csv(io.StringIO(run(path, "--csv")))
    assert set(rows["key"]) - {WHOLE} == names and set(rows["range"]) - {WHOLE} == names
    shown = terminal.text(doc).splitlines()
    cut = terminal.cut(sorted(names))
    assert len(set(cut)) == len(names) and all(len(c) <= terminal.WIDTH for c in cut)
    assert all(any(c in line for line in shown) for c in cut)      # the table: each name, cut apart


def test_torch_trace_range_names_stay_whole(run):
    names = _torch_names(TORCH_CPU)
    assert len(names) == 3
    _names_whole(TORCH_CPU, names, run)


@pytest.mark.skipif(not os.path.exists(NSYS_FILE), reason="nsys fixture with long NVTX names not recorded yet: "
                    "run benchmarks/gpu/analyse_fixtures.sh on the GPU machine and copy its "
                    "nsys2025_h100_long_names/ into tests/data/foreign/")
def test_nsys_range_names_stay_whole(report, run):
    path = report(NSYS)
    names = _nvtx_names(path)
    assert len(names) == 3
    _names_whole(path, names, run)
    stats = pd.read_csv(os.path.join(DATA, NSYS, "nvtx_sum.csv"))       # nsys stats of the same file
    assert {r.lstrip(":") for r in stats["Range"]} == names


def test_cut_keeps_names_apart():
    a, b = "x" * 70 + "query_key_value", "x" * 70 + "dense"
    assert terminal.cut(["short", a, b]) == ["short", a[:28] + "..." + a[-29:], b[:28] + "..." + b[-29:]]
    same = ["y" * 30 + "z" + "y" * 40, "y" * 30 + "w" + "y" * 40]      # alike once cut: both kept whole
    assert terminal.cut(same) == same
