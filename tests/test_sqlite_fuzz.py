"""The default nsys reader (readers.nsys_pass over sqlite_pages, ADBC where the pages stop)
against SQLite itself on mutated copies of a real export: truncations, header fields, cell
counts, cell pointers, child pointers (a page reached twice), payload sizes (overflow
chains), serial types, values and rowids of the kernel and runtime tables' b-trees. On each,
both give the same kernels (start, end, correlation id in file order) and the same launch
per correlation id, or both refuse: SQLite raises, or holds a value the reader refuses (a
time not an integer in 0..2**62, an id outside CUPTI's 0..2**32-1), and the reader raises
ReportError. The fast tier runs FAST cases; the slow one all CASES."""
import gzip
import os
import random
import re
import sqlite3

import numpy as np
import pytest

from fusionlab.analysis.readers import nsys_arrow, nsys_pass as P, nsys_sqlite as N
from fusionlab.analysis.readers import nsys_schema as NS
from fusionlab.analysis.readers import sqlite_pages as S
from fusionlab.analysis.readers.trace import ReportError

DATA = os.path.join(os.path.dirname(__file__), "data")
EXPORT = os.path.join(DATA, "foreign", "nsys2025_h100_async_ranges", "report.sqlite.gz")
CASES, FAST = 240, 40
KINDS = ("truncate", "header", "cells", "zero cells", "cell pointer", "child", "payload", "overflow",
         "serial type", "value", "rowid")

pytestmark = pytest.mark.skipif(not nsys_arrow.available(), reason="the default reader needs adbc-driver-sqlite")


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """The export's bytes and its two tables' b-tree pages: (interior pages, leaves)."""
    path = str(tmp_path_factory.mktemp("fuzz") / "base.sqlite")
    with gzip.open(EXPORT) as f, open(path, "wb") as g:
        g.write(f.read())
    trees = {}
    for table in (NS.KERNEL_TABLE, NS.RUNTIME_TABLE):
        root, _ = S._layout(path, table)
        f = S._File(path)
        leaves = S._leaves(f, root).tolist()
        f.close()
        trees[table] = ([root] if root not in leaves else [], leaves)
    with open(path, "rb") as f:
        return f.read(), trees


def _cell_offsets(page: bytes, leaf: bool) -> list[int]:
    head = 8 if leaf else 12
    n = int.from_bytes(page[3:5], "big")
    return [int.from_bytes(page[head + 2 * i:head + 2 * i + 2], "big") for i in range(n)]


def mutate(data: bytes, trees: dict, case: int) -> tuple[bytes, str]:
    """A mutated copy of the export (case: the seed) and what was done."""
    rng = random.Random(case)
    kind = KINDS[case % len(KINDS)]
    b = bytearray(data)
    ps = int.from_bytes(b[16:18], "big")
    table = rng.choice(list(trees))
    interior, leaves = trees[table]
    leaf = rng.choice(leaves)
    at = (leaf - 1) * ps
    page = bytes(b[at:at + ps])
    cells = _cell_offsets(page, True)
    cell = at + rng.choice(cells)
    if kind == "truncate":
        cut = rng.choice([(rng.choice(leaves) - 1) * ps, rng.randrange(100, len(b))])
        return bytes(b[:cut]), f"{kind} at {cut}"
    if kind == "header":
        off = rng.choice([16, 17, 18, 19, 20, 21, 22, 23, 28, 29, 30, 31, 44, 47, 56])
        b[off] = rng.choice([0, 1, 2, 3, 0x40, 0x80, 0xFF, b[off] ^ 1])
        return bytes(b), f"{kind} byte {off} = {b[off]}"
    if kind == "cells":
        n = rng.choice([1, len(cells) - 1, len(cells) + 1, 2000, 0xFFFF])
        b[at + 3:at + 5] = max(0, n).to_bytes(2, "big")
        return bytes(b), f"{kind} of leaf {leaf} = {n}"
    if kind == "zero cells":
        b[at + 3:at + 5] = b"\0\0"
        return bytes(b), f"{kind} in leaf {leaf} of {table}"
    if kind == "cell pointer":
        i = rng.randrange(len(cells))
        b[at + 8 + 2 * i:at + 10 + 2 * i] = rng.choice([0, 5, ps - 2, ps + 7, cells[0], rng.randrange(1 << 16)]) \
            .to_bytes(2, "big")
        return bytes(b), f"{kind} {i} of leaf {leaf}"
    if kind == "child" and interior:
        top = (interior[0] - 1) * ps
        kids = _cell_offsets(bytes(b[top:top + ps]), False)
        where = top + rng.choice(kids) if rng.random() < 0.7 else top + 8
        other = rng.choice([rng.choice(leaves), 1, len(b) // ps + 3, rng.randrange(1, len(b) // ps), 0])
        b[where:where + 4] = other.to_bytes(4, "big")
        return bytes(b), f"{kind} pointer of page {interior[0]} = {other}"
    if kind == "payload":
        b[cell] = max(0, min(0x7F, b[cell] + rng.choice([-2, -1, 1, 3])))
        return bytes(b), f"{kind} size of a cell of leaf {leaf}"
    if kind == "overflow":
        b[cell:cell + 2] = bytes([0x80 | rng.randrange(0x20, 0x7F), rng.randrange(0x80)])
        return bytes(b), f"{kind}: a cell of leaf {leaf} says a long payload"
    # a record's bytes: after the payload size and rowid varints
    rec = cell + 1
    while b[rec] >= 0x80:
        rec += 1
    rec += 1
    if kind == "serial type":
        j = rec + 1 + rng.randrange(b[rec] - 1)
        b[j] = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0x81])
        return bytes(b), f"{kind} at {j}"
    if kind == "value":
        j = rec + b[rec] + rng.randrange(8)
        b[j] = rng.randrange(256)
        return bytes(b), f"{kind} byte at {j}"
    b[cell + 1] = rng.randrange(256)       # rowid (or, where a child was asked of a one-level tree, this too)
    return bytes(b), f"rowid of a cell of leaf {leaf}"


def reader(path: str):
    """(kernels, launches, loose launch count) by the default path; ReportError where it refuses."""
    rep = N.scan(path)
    assert P.usable(rep)
    parts = list(P.kernel_times(rep))
    k = [tuple(map(int, r)) for p in parts for r in zip(*p)]
    calls = P.Calls(rep)
    return k, [tuple(map(int, r)) for r in zip(*calls.join)], len(calls.loose)


def _valid_time(v) -> bool:
    return isinstance(v, int) and 0 <= v < 1 << 62


def _valid_id(v) -> bool:
    return v is None or (isinstance(v, int) and 0 <= v <= 0xFFFFFFFF)


def oracle(path: str):
    """reader()'s answer by SQLite's own rows, or None where SQLite refuses or holds a value
    the reader refuses (module doc)."""
    try:
        con = sqlite3.connect(S.uri(path), uri=True)
        try:
            kernels = con.execute(f"SELECT start, end, correlationId FROM {NS.KERNEL_TABLE} ORDER BY rowid").fetchall()
            calls = con.execute(f"SELECT correlationId, start, end, globalTid, nameId FROM {NS.RUNTIME_TABLE} "
                                f"ORDER BY rowid").fetchall()
            launch = {i for i, v in con.execute("SELECT id, value FROM StringIds") if N.LAUNCH_API.match(v or "")}
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return None
    if not all(_valid_time(s) and _valid_time(e) and _valid_id(c) for s, e, c in kernels) or \
            not all(_valid_time(s) and _valid_time(e) and _valid_id(c) and (t is None or isinstance(t, int))
                    for c, s, e, t, _ in calls):
        return None
    first, loose = {}, 0
    for c, s, e, t, name in calls:
        if name in launch:
            if c is None:
                loose += 1
            else:
                first.setdefault(c, (c, s, e, t or 0))
    return [(s, e, -1 if c is None else c) for s, e, c in kernels], sorted(first.values()), loose


def check(data: bytes, trees: dict, case: int, tmp_path) -> None:
    mutated, what = mutate(data, trees, case)
    path = str(tmp_path / f"m{case}.sqlite")
    with open(path, "wb") as f:
        f.write(mutated)
    want = oracle(path)
    try:
        got = reader(path)
    except ReportError as e:
        assert want is None, f"case {case} ({what}): the reader refused ({e}) where SQLite reads it"
        assert "\n" not in str(e)
        return
    assert want is not None, f"case {case} ({what}): the reader answered where SQLite refuses"
    assert got == want, f"case {case} ({what}): the reader and SQLite differ"


def test_the_unmutated_export_reads_the_same(export, tmp_path):
    data, trees = export
    path = str(tmp_path / "r.sqlite")
    with open(path, "wb") as f:
        f.write(data)
    assert reader(path) == oracle(path) and len(reader(path)[0]) == 409


def test_the_default_reader_and_sqlite_agree_on_mutated_exports(export, tmp_path):
    data, trees = export
    for case in range(FAST):
        check(data, trees, case, tmp_path)


@pytest.mark.slow
def test_the_default_reader_and_sqlite_agree_on_every_mutated_export(export, tmp_path):
    data, trees = export
    for case in range(FAST, CASES):
        check(data, trees, case, tmp_path)


def test_the_mutations_cover_every_kind():
    assert len({KINDS[c % len(KINDS)] for c in range(FAST)}) == len(KINDS) and CASES >= 200
    assert re.fullmatch(r"[a-z ]+", " ".join(KINDS))


def _copy(export, tmp_path, name="r.sqlite") -> str:
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(export[0])
    return path


def _analyse(path: str):
    from fusionlab.analysis.__main__ import analyse
    return analyse(path)


def test_a_non_root_leaf_with_no_cells_is_refused_by_analyse_as_by_sqlite(export, tmp_path):
    path = _copy(export, tmp_path)
    ps = int.from_bytes(export[0][16:18], "big")
    leaf = export[1][NS.KERNEL_TABLE][1][3]
    with open(path, "r+b") as f:
        f.seek((leaf - 1) * ps + 3)
        f.write(b"\0\0")
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        sqlite3.connect(path).execute(f"SELECT count(*) FROM {NS.KERNEL_TABLE}").fetchall()
    with pytest.raises(ReportError, match="malformed"):
        _analyse(path)


@pytest.mark.parametrize("value", [1e30, float("inf"), -5, (1 << 63) - 1])
def test_a_time_out_of_range_is_refused_naming_table_and_column(export, tmp_path, value):
    path = _copy(export, tmp_path)
    con = sqlite3.connect(path)
    con.execute(f"UPDATE {NS.KERNEL_TABLE} SET end = ? WHERE rowid = (SELECT max(rowid) FROM {NS.KERNEL_TABLE})",
                (value,))
    con.commit()
    con.close()
    with pytest.raises(ReportError, match=f"{NS.KERNEL_TABLE}.*end"):
        _analyse(path)


def test_negative_correlation_ids_are_refused_naming_the_column(export, tmp_path):
    """-1 and -2 are the packing's MISSING and OTHER: never read as them."""
    path = _copy(export, tmp_path)
    con = sqlite3.connect(path)
    for table in (NS.KERNEL_TABLE, NS.RUNTIME_TABLE):
        con.execute(f"UPDATE {table} SET correlationId = -correlationId")
    con.commit()
    con.close()
    with pytest.raises(ReportError, match="correlationId holds an id outside"):
        _analyse(path)


def test_reading_a_wal_mode_export_leaves_no_file_beside_it(export, tmp_path):
    path = _copy(export, tmp_path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = WAL")
    con.close()
    before = sorted(os.listdir(tmp_path))
    got = _analyse(path)
    assert got["ranges"] and sorted(os.listdir(tmp_path)) == before == ["r.sqlite"]


def test_a_fifo_as_an_export_is_refused_at_once(tmp_path):
    path = str(tmp_path / "r.sqlite")
    os.mkfifo(path)
    with pytest.raises(ReportError, match="not a regular file"):
        _analyse(path)
