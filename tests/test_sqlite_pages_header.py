"""readers.sqlite_pages on the file's header and its page numbers: each header field SQLite
reads otherwise (WAL mode, the format versions, page size, payload fractions, reserved
space) refused with its reason, at the field's bounds; a file with reserved bytes read with
the usable size they leave (its overflow threshold usable - 35); a journal or WAL beside the
file, a FIFO or a short file refused; uri()'s two forms; and child page numbers past 2**16
and 2**24 (a sparse file) read as SQLite reads them."""
import os
import signal
import sqlite3
import urllib.parse

import pytest

from fusionlab.analysis.readers import sqlite_pages as S
from test_sqlite_pages_cells import PS, ROWS, decoded, patch, refused, sql, table, u16


@pytest.mark.parametrize("at, value, why", [
    (18, 2, "a WAL-mode file"), (19, 2, "a WAL-mode file"),
    (18, 3, "a file format version SQLite reads otherwise"), (19, 3, "a file format version SQLite reads otherwise"),
    (18, 0, "a file format version SQLite reads otherwise"),
    (16, b"\x01\x00", "a page size SQLite refuses"),        # 256
    (16, b"\x06\x00", "a page size SQLite refuses"),        # 1536: not a power of 2
    (16, b"\x00\x02", "a page size SQLite refuses"),        # 2 (1 means 65536)
    (21, 65, "payload fractions SQLite refuses"), (22, 33, "payload fractions SQLite refuses"),
    (23, 31, "payload fractions SQLite refuses"),
])
def test_a_header_field_sqlite_reads_otherwise(tmp_path, at, value, why):
    path = table(str(tmp_path / "t.sqlite"), ROWS)
    S._File(path).close()
    patch(path, at, value if isinstance(value, bytes) else bytes([value]))
    with refused(why):          # (SQLite's own schema query, before, may refuse it too)
        S._File(path)


@pytest.mark.parametrize("beside", ["-journal", "-wal"])
def test_a_journal_beside_the_file(tmp_path, beside):
    path = table(str(tmp_path / "t.sqlite"), ROWS)
    open(path + beside, "wb").close()
    with refused("a journal beside the file (a write under way)"):
        S._File(path)


def test_a_fifo_or_a_short_file_is_not_a_regular_sqlite_file(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)

    def waited(*_):
        raise TimeoutError("the FIFO's open waited for a writer")
    old = signal.signal(signal.SIGALRM, waited)
    signal.alarm(5)                 # (a blocking open would wait for ever, using no CPU time)
    try:
        with refused("not a regular SQLite file"):
            S._File(fifo)           # at once: opened without waiting for a writer, never read
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    short = tmp_path / "short"
    short.write_bytes(b"SQLite format 3\0" + bytes(83))
    with refused("not a regular SQLite file"):
        S._File(str(short))


def test_uri_is_immutable_unless_a_write_ahead_log_lies_beside(tmp_path):
    path = table(str(tmp_path / "a b.sqlite"), ROWS)
    name = urllib.parse.quote(os.path.abspath(path))
    assert S.uri(path) == f"file:{name}?mode=ro&immutable=1"
    open(path + "-wal", "wb").close()
    assert S.uri(path) == f"file:{name}?mode=ro"


def test_pages_of_64_kib(tmp_path):
    """The header's page size 1 means 65536."""
    path = str(tmp_path / "t.sqlite")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", ROWS)
    con.commit()
    con.close()
    with open(path, "rb") as f:
        assert f.read(18)[16:] == b"\x00\x01"
    assert decoded(path, ["a", "b"]) == sql(path, ["a", "b"]) == ROWS


def reserved(path: str, rows: list[tuple], cols: str, reserve: int = 32) -> str:
    """A file of 512-byte pages with `reserve` bytes reserved at each page's end (set in an
    empty file's header, which SQLite keeps), the rows written by SQLite after."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 512")
    con.execute("VACUUM")
    con.close()
    patch(path, 20, bytes([reserve]))
    patch(path, 105, (512 - reserve).to_bytes(2, "big"))    # the empty schema page's content start
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE t ({cols})")
    con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(rows[0]))})", rows)
    con.commit()
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    return path


def test_reserved_bytes_at_each_pages_end(tmp_path):
    """32 bytes reserved on 512-byte pages: 480 usable, the least SQLite takes; the rows
    read; one byte more reserved: refused."""
    rows = [(i, -i) for i in range(300)]
    path = reserved(str(tmp_path / "t.sqlite"), rows, "a INTEGER, b INTEGER")
    assert decoded(path, ["a", "b"]) == sql(path, ["a", "b"]) == rows
    with open(path, "rb") as f:
        data = f.read()
    assert data[20] == 32 and 475 in {u16(data, p * 512 + 8) for p in range(1, len(data) // 512)}
    patch(path, 20, bytes([33]))
    with refused("a reserved space SQLite refuses"):
        S._File(path)


@pytest.mark.parametrize("payload", [445, 446])
def test_the_overflow_threshold_of_a_page_with_reserved_bytes(tmp_path, payload):
    """usable - 35 with 480 usable: a payload of 445 stays on its page, 446 spills."""
    texts = [54] * 8 if payload == 445 else [54] * 7 + [55]       # header 11, two 1-byte integers
    path = reserved(str(tmp_path / "t.sqlite"), [(5, -5, *("x" * n for n in texts))],
                    "a INTEGER, b INTEGER, " + ", ".join(f"t{i} TEXT" for i in range(8)))
    con = sqlite3.connect(path)
    assert con.execute("SELECT mx_payload FROM dbstat WHERE name = 't'").fetchone()[0] == payload
    con.close()
    if payload == 445:
        assert decoded(path, ["a", "b"]) == sql(path, ["a", "b"]) == [(5, -5)]
    else:
        with refused("a row on overflow pages"):
            decoded(path, ["a", "b"])


def test_child_pages_past_2_16_and_2_24(tmp_path):
    """Two leaves moved to pages 70,000 and 2**24 + 3 of a sparse file (its header's page
    count set to match), the root's pointers to them changed: the 4-byte page numbers read
    whole, as SQLite reads them."""
    path = str(tmp_path / "t.sqlite")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 512")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, -i) for i in range(200)])
    con.commit()
    got = con.execute("SELECT pageno, pagetype FROM dbstat WHERE name = 't' ORDER BY path").fetchall()
    con.close()
    root, leaves = got[0][0], [p for p, _ in got[1:]]
    assert got[0][1] == "internal" and len(leaves) >= 3
    want = sql(path, ["a", "b"])
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        base = (root - 1) * 512
        cells = [base + u16(data, base + 12 + 2 * i) for i in range(u16(data, base + 3))]
        for cell, to in zip(cells[:2], (70_000, (1 << 24) + 3)):
            old = int.from_bytes(data[cell:cell + 4], "big")
            f.seek((to - 1) * 512)
            f.write(data[(old - 1) * 512:old * 512])
            f.seek(cell)
            f.write(to.to_bytes(4, "big"))
        f.seek(28)
        f.write(((1 << 24) + 3).to_bytes(4, "big"))
    assert sql(path, ["a", "b"]) == want
    assert decoded(path, ["a", "b"]) == want
