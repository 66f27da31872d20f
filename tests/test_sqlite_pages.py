"""readers.sqlite_pages reads what SQLite reads: every column of real exports' kernel and
runtime tables, and values of every integer size, NULLs and deleted rows in a tree of
several levels, against `SELECT ... ORDER BY rowid`; it refuses what it does not decode,
and nsys_columns goes on through ADBC from the first row it refused, with the same rows in
the same batches."""
import gzip
import os
import shutil
import sqlite3

import numpy as np
import pytest

from fusionlab.analysis.readers import nsys_arrow, nsys_columns
from fusionlab.analysis.readers import sqlite_pages as S

DATA = os.path.join(os.path.dirname(__file__), "data")
VALUES = [0, 1, -1, 2, 127, -128, 255, 1 << 15, -(1 << 15) - 1, 1 << 23, -(1 << 23), (1 << 31) - 1, -(1 << 31),
          1 << 40, -(1 << 47), 1 << 47, (1 << 63) - 1, -(1 << 63), None]


def _sql(path: str, table: str, cols: list[str]) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid").fetchall()
    finally:
        con.close()


def _pages(path: str, table: str, cols: list[str], batch: int = S.BATCH) -> tuple[list[tuple], list]:
    parts, lasts = [], []
    for b, last in S.columns(path, table, cols, batch):
        parts.append(list(zip(*[[None if n else int(v) for v, n in zip(*c)] for c in b])))
        lasts.append(last)
    return [r for p in parts for r in p], lasts


@pytest.mark.parametrize("rel", ["nsys2025_h200/mlp_eager", "foreign/nsys2025_h100_async_ranges"])
@pytest.mark.parametrize("table", ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"])
def test_every_column_of_real_exports_as_sqlite_reads_it(rel, table, tmp_path):
    path = str(tmp_path / "r.sqlite")
    with gzip.open(os.path.join(DATA, rel, "report.sqlite.gz")) as f, open(path, "wb") as g:
        shutil.copyfileobj(f, g)
    cols = [r[1] for r in sqlite3.connect(path).execute(f"PRAGMA table_info({table})")]
    rows, _ = _pages(path, table, cols)
    assert rows == _sql(path, table, cols) and len(rows) > 100


def _table(path: str, page_size: int = 512, rows: int = 3000) -> None:
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA page_size = {page_size}")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER, c TEXT, d INTEGER NOT NULL)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                    [(VALUES[i % len(VALUES)], VALUES[(i * 7) % len(VALUES)], "x" * (i % 40), i) for i in range(rows)])
    con.execute("DELETE FROM t WHERE d % 11 = 3")
    con.commit()
    con.close()


def test_every_integer_size_nulls_and_deleted_rows_in_a_deep_tree(tmp_path):
    path = str(tmp_path / "t.sqlite")
    _table(path)
    rows, lasts = _pages(path, "t", ["d", "b", "a"], batch=512 * 7)
    assert rows == _sql(path, "t", ["d", "b", "a"]) and len(lasts) > 20
    con = sqlite3.connect(path)
    seen = 0
    for b, last in S.columns(path, "t", ["d"], 512 * 7):
        seen += len(b[0][0])
        assert last == con.execute("SELECT rowid FROM t ORDER BY rowid LIMIT 1 OFFSET ?", (seen - 1,)).fetchone()[0]


@pytest.mark.parametrize("case", ["float", "text", "wal", "journal", "overflow", "rowid alias",
                                  "added column"])
def test_refuses_what_it_does_not_decode(case, tmp_path):
    path = str(tmp_path / "t.sqlite")
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER)" if case == "rowid alias"
                else "CREATE TABLE t (a, b INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, i) for i in range(100)])
    value = {"float": 1.5, "text": "7", "overflow": b"x" * 10000}.get(case)
    if value is not None:
        con.execute("UPDATE t SET a = ? WHERE b = 50", (value,))
    con.commit()
    if case == "added column":      # the rows written before hold one column fewer
        con.execute("ALTER TABLE t ADD COLUMN c INTEGER")
        con.commit()
    if case == "journal":
        open(path + "-journal", "wb").close()
    if case == "wal":
        assert con.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    con.close()
    with pytest.raises(S.Unsupported):
        for _ in S.columns(path, "t", ["a", "b"]):
            pass


@pytest.mark.skipif(not nsys_arrow.available(), reason="needs adbc-driver-sqlite")
def test_goes_on_through_adbc_from_the_first_row_refused(tmp_path, monkeypatch):
    path = str(tmp_path / "t.sqlite")
    _table(path)
    con = sqlite3.connect(path)
    con.execute("UPDATE t SET a = 2.5 WHERE d = 2501")
    con.commit()
    con.close()
    report = type("R", (), {"source": path})()
    q = "SELECT d, coalesce(b, -1) FROM t {where} ORDER BY rowid"
    seen = [0]

    def convert(c):
        seen[0] = max(seen[0], int(c["d"][0].max()))
        return [c["d"][0], nsys_columns.coalesce(c["b"], -1)]
    monkeypatch.setattr(S.columns, "__defaults__", (512 * 5,))
    got = list(nsys_columns.read_table(report, "t", ["d", "b", "a"], convert, q, 100))
    want = list(nsys_columns.rechunk(nsys_arrow.column_batches(path, q.format(where=""), nsys_columns.CHUNK), 100))
    assert [len(b[0]) for b in got] == [len(b[0]) for b in want]
    assert all(np.array_equal(x, y) for g, w in zip(got, want) for x, y in zip(g, w))
    assert 2400 < seen[0] < 2501       # pages were read as far as the float
