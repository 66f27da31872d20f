"""readers.sqlite_pages on files SQLite reads but never writes, and on what it calls
malformed, each made by editing the bytes of a small table Python's sqlite3 wrote:
varints longer than their value needs (SQLite reads a varint of any length up to 9 bytes,
so the decoder must read the same rows, or refuse), a rowid of 9 bytes, an empty table,
the dtypes of each decoding path, page numbers outside the file and a file cut short
while read, a missing table or column, batches smaller than a page; each refusal with its
reason."""
import os
import re
import sqlite3

import numpy as np
import pytest

from fusionlab.analysis.readers import sqlite_pages as S

PS = 1024


def varint(v: int, n: int) -> bytes:
    """v in n bytes (n <= 8; longer than v needs where n says so): 7 bits a byte, big-endian."""
    assert 0 <= v < 1 << (7 * n)
    groups = [(v >> (7 * (n - 1 - k))) & 0x7F for k in range(n)]
    return bytes([g | 0x80 for g in groups[:-1]] + [groups[-1]])


def read_varint(b, at: int) -> tuple[int, int]:
    """(value, length) of the SQLite varint at `at`."""
    v = 0
    for k in range(9):
        c = b[at + k]
        if k == 8:
            return (v << 8) | c, 9
        v = (v << 7) | (c & 0x7F)
        if c < 0x80:
            return v, k + 1


def refused(why: str):
    """Unsupported with exactly this reason."""
    return pytest.raises(S.Unsupported, match=f"^{re.escape(why)}$")


def u16(b, at: int) -> int:
    return int.from_bytes(b[at:at + 2], "big")


def table(path: str, rows: list[tuple], cols: str = "a INTEGER, b INTEGER", rowids=None) -> str:
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA page_size = {PS}")
    con.execute(f"CREATE TABLE t ({cols})")
    n = len(rows[0]) if rows else 0
    if not rows:
        pass
    elif rowids is None:
        con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * n)})", rows)
    else:
        con.executemany(f"INSERT INTO t (rowid, {cols.replace(' INTEGER', '').replace(' TEXT', '')}) "
                        f"VALUES (?, {', '.join('?' * n)})", [(i, *r) for i, r in zip(rowids, rows)])
    con.commit()
    con.close()
    return path


def recode(path: str, cell: int, size_len: int | None = None, rowid_len: int | None = None, page: int = 2) -> None:
    """Cell `cell` of leaf page `page` written again in the page's free space with its
    payload size in size_len bytes and its rowid in rowid_len (None: as they were), its
    cell pointer moved to it."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    base = (page - 1) * PS
    assert data[base] == S.LEAF
    n, at = u16(data, base + 3), base + u16(data, base + 8 + 2 * cell)
    size, k1 = read_varint(data, at)
    rowid, k2 = read_varint(data, at + k1)
    body = data[at + k1 + k2:at + k1 + k2 + size]
    new = varint(size, size_len or k1) + varint(rowid, rowid_len or k2) + body
    start = u16(data, base + 5) - len(new)
    assert start >= 8 + 2 * n
    data[base + start:base + start + len(new)] = new
    data[base + 8 + 2 * cell:base + 10 + 2 * cell] = start.to_bytes(2, "big")
    data[base + 5:base + 7] = start.to_bytes(2, "big")
    with open(path, "wb") as f:
        f.write(data)


def sql(path: str, cols: list[str]) -> list[tuple]:
    con = sqlite3.connect(S.uri(path), uri=True)
    try:
        return con.execute(f"SELECT {', '.join(cols)} FROM t ORDER BY rowid").fetchall()
    finally:
        con.close()


def decoded(path: str, cols: list[str]) -> list[tuple]:
    rows = []
    for b, _ in S.columns(path, "t", cols):
        rows += list(zip(*[[None if n else int(v) for v, n in zip(*c)] for c in b]))
    return rows


ROWS = [(5, -5), (300, -300), (None, 1), (0, 1 << 40), (7, 7)]
TEXT = [(i, "x" * 50, "y" * 50, "z" * (30 + 5 * i), -i) for i in range(5)]   # payloads of 2-byte sizes (>= 128)
TEXT_COLS = "a INTEGER, s TEXT, u TEXT, v TEXT, b INTEGER"


@pytest.mark.parametrize("size_len", [2, 3])
def test_payload_sizes_longer_than_their_values_read_as_sqlite_reads_them(tmp_path, size_len):
    """A payload size of 1 byte written in 2 or 3 (0x80 0x05, 0x80 0x80 0x05), in the
    middle row and in the last."""
    for cell in (2, 4):
        path = table(str(tmp_path / f"c{cell}.sqlite"), ROWS)
        recode(path, cell, size_len)
        assert decoded(path, ["a", "b"]) == sql(path, ["a", "b"]) == ROWS


@pytest.mark.parametrize("rowid_len", [2, 3])
def test_a_rowid_longer_than_its_value_is_read_in_the_last_row_and_refused_before(tmp_path, rowid_len):
    """The rowids' varints are read once per batch where its first and last are as long
    (they grow with the rowid): a longer one between them is refused (the record is not
    where it would be) or read as SQLite reads it, never misread; in the last row it is read."""
    path = table(str(tmp_path / "last.sqlite"), ROWS)
    recode(path, 4, None, rowid_len)
    assert decoded(path, ["a", "b"]) == sql(path, ["a", "b"]) == ROWS
    assert [last for _, last in S.columns(path, "t", ["a"])] == [5]
    path = table(str(tmp_path / "mid.sqlite"), ROWS)
    recode(path, 2, None, rowid_len)
    assert sql(path, ["a", "b"]) == ROWS
    try:
        assert decoded(path, ["a", "b"]) == ROWS
    except S.Unsupported as e:
        assert str(e) in (RECORD, "a payload size that disagrees with its record (SQLite: malformed)")


def test_a_payload_size_of_one_byte_written_in_four_is_refused_as_overflow(tmp_path):
    """0x80 0x80 0x80 0x05: read as 2**21, past usable - 35."""
    path = table(str(tmp_path / "t.sqlite"), ROWS)
    recode(path, 2, 4)
    assert sql(path, ["a", "b"]) == ROWS
    with refused("a row on overflow pages"):
        decoded(path, ["a", "b"])


@pytest.mark.parametrize("size_len", [3, 4])
def test_a_payload_size_of_two_bytes_written_in_more(tmp_path, size_len):
    """Payload sizes of 110..140 bytes (2-byte varints, 0x80 | 0 in no byte but the
    first of a 4-byte one) in 3 or 4 bytes: 3 read as SQLite reads them; a 4-byte size,
    which the decoder reads as 2**21, refused as a row on overflow pages."""
    path = table(str(tmp_path / "t.sqlite"), TEXT, TEXT_COLS)
    recode(path, 3, size_len)
    assert sql(path, ["a", "b"]) == [(r[0], r[-1]) for r in TEXT]
    if size_len == 3:
        assert decoded(path, ["a", "b"]) == [(r[0], r[-1]) for r in TEXT]
        for b, last in S.columns(path, "t", ["b"]):
            assert last == 5
    else:
        with refused("a row on overflow pages"):
            decoded(path, ["a", "b"])


def test_the_last_rows_rowid_after_a_payload_size_of_two_or_three_bytes(tmp_path):
    for size_len in (None, 3):
        path = table(str(tmp_path / f"l{size_len}.sqlite"), TEXT, TEXT_COLS,
                     rowids=[10, 20, 30, 40, 20_000])
        recode(path, 4, size_len)
        assert [last for _, last in S.columns(path, "t", ["a"])] == [20_000]


RECORD = "a record with a multi-byte serial type or header, or with fewer columns than the table"


@pytest.mark.parametrize("page_size, blob, why", [
    (4096, 20_000, "a row on overflow pages"),       # a 3-byte size (first byte 0x81): past usable - 35
    (4096, 5_000, "a row on overflow pages"),        # a 2-byte size past usable - 35
    (65536, 17_000, RECORD),    # kept on its page: its blob's serial type is 3 bytes
    (65536, 40_000, RECORD),        # likewise, its size's first byte 0x82
])
def test_a_large_row_refused_for_what_it_is(tmp_path, page_size, blob, why):
    path = str(tmp_path / "big.sqlite")
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA page_size = {page_size}")
    con.execute("CREATE TABLE t (a INTEGER, b BLOB)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(1, b"x"), (2, b"y" * blob), (3, b"z")])
    con.commit()
    assert blob < con.execute("SELECT max(mx_payload) FROM dbstat WHERE name = 't'").fetchone()[0] < blob + 8
    con.close()
    with refused(why):
        decoded(path, ["a"])


def test_rowids_of_nine_bytes_are_refused(tmp_path):
    """A negative rowid, or one past 2**56, is a 9-byte varint, which the decoder refuses
    (SQLite reads it)."""
    for rowids in ([-3, -2, -1], [-1, 1, 2], [1, 2, 1 << 56]):
        path = table(str(tmp_path / f"r{rowids[0]}_{rowids[-1]}.sqlite"), ROWS[:3], rowids=rowids)
        assert [r[0] for r in sql(path, ["rowid"])] == rowids
        # (the last: the first row's short varint read on past its page's end, which is its buffer's)
        with refused("a 9-byte varint" if rowids[0] < 0 else "a cell running past its page"):
            decoded(path, ["a"])
    rows = [(i, -i) for i in range(300)]        # several pages: a 9-byte rowid whose last byte is 0x00 last
    path = table(str(tmp_path / "far.sqlite"), rows, rowids=[*range(1, 300), 1 << 56])
    with refused("a 9-byte varint"):
        decoded(path, ["a"])
    # several pages: an 8-byte rowid last, read
    path = table(str(tmp_path / "most.sqlite"), rows, rowids=[*range(1, 300), (1 << 56) - 1])
    assert decoded(path, ["a", "b"]) == rows
    assert [last for _, last in S.columns(path, "t", ["a"])] == [(1 << 56) - 1]


def test_an_empty_table_gives_one_batch_of_no_rows(tmp_path):
    path = table(str(tmp_path / "e.sqlite"), [])
    got = list(S.columns(path, "t", ["a", "b"]))
    assert len(got) == 1 and got[0][1] is None
    for v, null in got[0][0]:
        assert v.dtype == np.int64 and null.dtype == bool and len(v) == len(null) == 0


@pytest.mark.parametrize("values", [[-128, 5, 127], [None, 0, 1], [0, 1, 1], [-200, 300, -32768],
                                    [1 << 62, -(1 << 63), 5 << 50], [None, -200, 0, 1 << 40, 1, 7]])
def test_each_decoding_path_gives_int64_values_and_a_bool_mask(tmp_path, values):
    """One byte each; NULL, 0 and 1 only; 0 and 1 only; one size (2, 8 bytes); mixed."""
    path = table(str(tmp_path / "d.sqlite"), [(v, 0) for v in values])
    [(v, null), _], last = next(S.columns(path, "t", ["a", "b"]))
    assert v.dtype == np.int64 and null.dtype == bool and last == len(values)
    assert [None if n else int(x) for x, n in zip(v, null)] == values
    assert v[null].tolist() == [0] * int(null.sum())


def test_pages_outside_the_file_are_refused_by_the_reader(tmp_path):
    path = table(str(tmp_path / "p.sqlite"), ROWS)
    f = S._File(path)
    try:
        assert f.pages == 2 and f.read(np.array([1, 2]))[:16].tobytes() == b"SQLite format 3\0"
        for pages in ([0], [0, 1], [2, 3], [3]):
            with refused("a page past the end of the file"):
                f.read(np.array(pages))
        os.truncate(path, PS + 10)        # cut short while open: page 2 no longer whole
        with refused("a page past the end of the file"):
            f.read(np.array([1, 2]))
    finally:
        f.close()


# --- what SQLite calls malformed, each refused with its reason ----------------------------

def tree(path: str) -> tuple[str, list[int]]:
    """400 rows under an interior root (page 2): the file and its leaves in key order."""
    table(path, [(i, -i) for i in range(400)])
    con = sqlite3.connect(path)
    got = con.execute("SELECT pageno, pagetype FROM dbstat WHERE name = 't' ORDER BY path").fetchall()
    con.close()
    assert got[0] == (2, "internal") and {t for _, t in got[1:]} == {"leaf"} and len(got) > 3
    return path, [p for p, _ in got[1:]]


def patch(path: str, at: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(data)


def test_a_leaf_of_another_kind(tmp_path):
    path, leaves = tree(str(tmp_path / "t.sqlite"))
    patch(path, (leaves[1] - 1) * PS, bytes([10]))          # an index leaf among the table's leaves
    with refused("a leaf of another kind"):
        decoded(path, ["a"])
    patch(path, (leaves[1] - 1) * PS, bytes([S.LEAF]))
    patch(path, (leaves[0] - 1) * PS, bytes([10]))          # the first: the level read as interior pages
    with refused("a b-tree page of another kind, or leaves at several depths"):
        decoded(path, ["a"])


@pytest.mark.parametrize("cells, why", [((PS - 8) // 2 + 1, "a cell count past its page"),
                                        ((PS - 8) // 2, "a cell pointer outside its page")])
def test_a_leafs_cell_count_at_its_pages_end(tmp_path, cells, why):
    """8 + 2 x cells bytes of header and pointers: past the page refused for its count; as
    long as the page, for its pointers (each then inside the pointer array)."""
    path, leaves = tree(str(tmp_path / "t.sqlite"))
    patch(path, (leaves[2] - 1) * PS + 3, cells.to_bytes(2, "big"))
    with refused(why):
        decoded(path, ["a"])


def test_a_non_root_leaf_with_no_cells(tmp_path):
    path, leaves = tree(str(tmp_path / "t.sqlite"))
    patch(path, (leaves[1] - 1) * PS + 3, bytes(2))
    with refused("a non-root leaf page with no cells (SQLite: malformed)"):
        decoded(path, ["a"])


def test_a_cell_at_the_end_of_its_page(tmp_path):
    """One NULL: a cell of 4 bytes (payload size, rowid, header size, serial type) at
    usable - 4, the last place a cell pointer may point; one byte further is outside."""
    path = table(str(tmp_path / "t.sqlite"), [(None,)], "a INTEGER")
    with open(path, "rb") as f:
        assert f.read()[PS + 8:PS + 10] == (PS - 4).to_bytes(2, "big")
    assert decoded(path, ["a"]) == sql(path, ["a"]) == [(None,)]
    patch(path, PS + 8, (PS - 3).to_bytes(2, "big"))
    with refused("a cell pointer outside its page"):
        decoded(path, ["a"])


def move_cell(path: str, page: int, cell: int, to: int, head: int = 8, ps: int = PS) -> None:
    """Cell `cell` of page `page` copied to offset `to` of its page, its pointer moved there
    (head: the page header's size, 8 for a leaf, 12 for an interior page)."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        base = (page - 1) * ps
        at = base + u16(data, base + head + 2 * cell)
        body = bytes(data[at:at + 64])
        f.seek(base + to)
        f.write(body[:min(64, ps - to)])
        f.seek(base + head + 2 * cell)
        f.write(to.to_bytes(2, "big"))
        f.seek(base + 5)
        f.write(min(to, u16(data, base + 5)).to_bytes(2, "big"))


def test_a_leaf_cell_right_after_its_pointer_array(tmp_path):
    """The first place a cell may lie, 8 + 2 x cells: read; one byte before: refused."""
    path = table(str(tmp_path / "t.sqlite"), ROWS)
    move_cell(path, 2, 3, 8 + 2 * len(ROWS))
    assert decoded(path, ["a", "b"]) == sql(path, ["a", "b"]) == ROWS
    patch(path, PS + 8 + 2 * 3, (8 + 2 * len(ROWS) - 1).to_bytes(2, "big"))
    with refused("a cell pointer outside its page"):
        decoded(path, ["a", "b"])


def test_a_batch_whose_first_rowid_is_shorter_than_the_rest(tmp_path):
    """Rowids 127, 128, ...: the first a 1-byte varint, the next ones 2 bytes."""
    rows = [(i, -i) for i in range(300)]
    path = table(str(tmp_path / "t.sqlite"), rows, rowids=range(127, 427))
    assert decoded(path, ["a", "b"]) == rows


def test_a_payload_size_past_its_page_or_short_of_its_record(tmp_path):
    """The row at the page's end (the first one written) one byte longer than the page
    holds; a middle row's size one byte short of its record."""
    path = table(str(tmp_path / "end.sqlite"), ROWS)
    with open(path, "rb") as f:
        data = f.read()
    at = PS + u16(data, PS + 8)
    patch(path, at, bytes([data[at] + 1]))
    with refused("a payload past its page"):
        decoded(path, ["a"])
    path = table(str(tmp_path / "short.sqlite"), ROWS)
    at = PS + u16(data, PS + 8 + 2 * 2)
    patch(path, at, bytes([data[at] - 1]))
    with refused("a payload size that disagrees with its record (SQLite: malformed)"):
        decoded(path, ["a"])


def test_a_serial_type_of_several_bytes_and_a_value_not_an_integer(tmp_path):
    """A record's first serial type 0x80 (a varint going on; the header size still says
    one byte each); a float in a column read."""
    path = table(str(tmp_path / "t.sqlite"), ROWS)
    with open(path, "rb") as f:
        data = f.read()
    at = PS + u16(data, PS + 8 + 2 * 2)     # payload size, rowid (1 byte each), header size, first type
    patch(path, at + 3, bytes([0x80]))
    with refused("a multi-byte serial type"):
        decoded(path, ["b"])
    path = table(str(tmp_path / "f.sqlite"), [(1, 2.5), (2, 3)], "a INTEGER, b")
    with refused("a value that is not an integer"):
        decoded(path, ["b"])
    assert decoded(path, ["a"]) == [(1,), (2,)]


# --- the table and its columns ----------------------------------------------------------------

def test_a_missing_table_or_column_or_a_key_column(tmp_path):
    path = table(str(tmp_path / "t.sqlite"), ROWS)
    con = sqlite3.connect(path)
    con.execute("CREATE VIRTUAL TABLE v USING fts5(x)")        # rootpage 0
    con.execute("CREATE TABLE k (a INTEGER PRIMARY KEY, b INTEGER)")
    con.commit()
    con.close()
    for name in ("u", "v"):
        with refused(f"{name}: no such table"):
            next(S.columns(path, name, ["x"]))
    with refused("k: a primary key or hidden column"):
        next(S.columns(path, "k", ["b"]))
    with refused("t has no column zz"):
        next(S.columns(path, "t", ["a", "zz", "yy"]))        # the first one missing named


def test_two_leaves_one_empty_and_batches_smaller_than_a_page(tmp_path):
    """A table of exactly two leaves: the second with no cells is refused (a non-root
    leaf); a batch of fewer bytes than a page holds one page."""
    rows = [(i, -i) for i in range(150)]
    path = table(str(tmp_path / "t.sqlite"), rows)
    con = sqlite3.connect(path)
    leaves = [p for p, t in con.execute("SELECT pageno, pagetype FROM dbstat WHERE name = 't' ORDER BY path")
              if t == "leaf"]
    con.close()
    assert len(leaves) == 2
    got = list(S.columns(path, "t", ["a"], batch=100))
    assert len(got) == 2 and sum(len(b[0][0]) for b, _ in got) == 150 and got[-1][1] == 150
    patch(path, (leaves[1] - 1) * PS + 3, bytes(2))
    with refused("a non-root leaf page with no cells (SQLite: malformed)"):
        decoded(path, ["a"])
