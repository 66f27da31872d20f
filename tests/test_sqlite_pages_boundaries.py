"""readers.sqlite_pages at the file format's boundaries, against SQLite itself (tables made
with Python's sqlite3, read back with `SELECT ... ORDER BY rowid`): rowids past 16,383
(where a rowid's varint grows from 2 bytes to 3), integers of every stored size (serial
types 1-6: 1, 2, 3, 4, 6 and 8 bytes), negative at each, in columns of one size (the fast
path) and mixed; and rows whose payload lies around the largest that stays on its leaf
page (usable - 35) and the smallest local part of a row that spills (the min-local
threshold), each spill refused, never read."""
import sqlite3

import pytest

from fusionlab.analysis.readers import sqlite_pages as S

# per stored size (serial types 1-6), values at and inside its ends, negative and positive
SIZES = {1: [-128, -1, 2, 127], 2: [-32768, -200, -129, 128, 32767], 3: [-(1 << 23), -32769, 32768, (1 << 23) - 1],
         4: [-(1 << 31), -(1 << 23) - 1, 1 << 23, (1 << 31) - 1], 6: [-(1 << 47), -(1 << 31) - 1, 1 << 31, (1 << 47) - 1],
         8: [-(1 << 63), -(1 << 47) - 1, 1 << 47, (1 << 63) - 1]}
MIXED = [v for vs in SIZES.values() for v in vs] + [0, 1, None]
ROWS = 20_000      # rowids 1..20000: varints of 1, 2 and 3 bytes


def sql(path, table, cols):
    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid").fetchall()
    finally:
        con.close()


def pages(path, table, cols, batch=S.BATCH):
    """The rows columns() reads, each batch's last rowid, and each batch's last row's last column."""
    rows, lasts, ends = [], [], []
    for b, last in S.columns(path, table, cols, batch):
        rows += list(zip(*[[None if n else int(v) for v, n in zip(*c)] for c in b]))
        lasts.append(last)
        ends.append(rows[-1][-1])
    return rows, lasts, ends


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """ROWS rows: a column per stored size (every value of one size), one mixing all sizes,
    NULL, 0 and 1, and a row count; a few rows deleted."""
    path = str(tmp_path_factory.mktemp("sqlite") / "wide.sqlite")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 1024")
    con.execute("CREATE TABLE t (s1 INTEGER, s2 INTEGER, s3 INTEGER, s4 INTEGER, s6 INTEGER, s8 INTEGER, "
                "mixed INTEGER, n INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(*(SIZES[k][i % len(SIZES[k])] for k in (1, 2, 3, 4, 6, 8)), MIXED[(i * 7) % len(MIXED)], i)
                     for i in range(ROWS)])
    con.execute("DELETE FROM t WHERE n % 997 = 5")
    con.commit()
    assert con.execute("SELECT max(rowid) FROM t").fetchone()[0] == ROWS > 16_384
    con.close()
    return path


COLS = ["s1", "s2", "s3", "s4", "s6", "s8", "mixed", "n"]


@pytest.mark.parametrize("batch", [S.BATCH, 1024 * 16, 1024])
def test_every_integer_size_past_rowid_16384_as_sqlite_reads_it(wide, batch):
    rows, lasts, ends = pages(wide, "t", COLS, batch)
    assert rows == sql(wide, "t", COLS)
    assert lasts[-1] == ROWS
    # each batch's last rowid (a page at a time: on both sides of 16,383 -> 16,384)
    rowids = dict(zip((r[0] for r in sql(wide, "t", ["n"])), (r[0] for r in sql(wide, "t", ["rowid"]))))
    assert lasts == [rowids[n] for n in ends]
    assert batch > 1024 or (any(e < 16_384 for e in lasts) and any(e > 16_384 for e in lasts))


def test_a_column_of_one_negative_size_keeps_its_sign(wide):
    """Every value of a batch of one stored size (the fast path): -200 stays -200."""
    for b, _ in S.columns(wide, "t", ["s2", "s1", "s8"], 1024 * 4):
        for (v, null), k in zip(b, (2, 1, 8)):
            assert not null.any() and set(v.tolist()) <= set(SIZES[k])
    got = [r[0] for r in pages(wide, "t", ["s2"])[0]]
    assert -200 in got and min(got) == -32768 and max(got) == 32767


def test_a_table_that_starts_past_rowid_16384(tmp_path):
    """Every rowid's varint 3 bytes long (and one of 5, past 2**28)."""
    path = str(tmp_path / "far.sqlite")
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
    con.executemany("INSERT INTO t (rowid, a, b) VALUES (?, ?, ?)",
                    [(16_384 + i, -i, MIXED[i % len(MIXED)]) for i in range(3000)] + [(1 << 30, -7, 7)])
    con.commit()
    con.close()
    rows, lasts, _ = pages(path, "t", ["a", "b"])
    assert rows == sql(path, "t", ["a", "b"]) and lasts[-1] == 1 << 30


def test_payloads_of_two_byte_sizes_before_rowids_of_three_bytes(tmp_path):
    """Payload sizes of 1 and 2 bytes on one page, each followed by a rowid whose first
    byte has its continuation bit (the last one 8 bytes long): each varint ends where its
    own bytes say."""
    path = str(tmp_path / "long.sqlite")
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER, c TEXT, d TEXT, e TEXT)")
    con.executemany("INSERT INTO t (rowid, a, b, c, d, e) VALUES (?, ?, ?, ?, ?, ?)",
                    [(16_000 + 3 * i, MIXED[i % len(MIXED)], -i - (1 << 62), "y" * 57, "z" * (i % 58), "w" * 20)
                     for i in range(2000)] + [(1 << 50, 5, -5, "y", "", "")])   # an 8-byte rowid
    con.commit()
    assert con.execute("SELECT min(mx_payload) < 128, max(mx_payload) >= 128 FROM dbstat WHERE name = 't'"
                       ).fetchone() == (1, 1)     # payload sizes of 1 and 2 bytes on the same pages
    con.close()
    rows, lasts, _ = pages(path, "t", ["a", "b"], 4096 * 4)
    assert rows == sql(path, "t", ["a", "b"]) and lasts[-1] == 1 << 50


# --- payloads around the overflow thresholds --------------------------------------------

TEXTS = 24          # text columns after the two integers: a row's payload set to the byte


def spill_table(path, page_size, payload):
    """A table of (a, b INTEGER, TEXTS text columns) with three rows: payloads 100, `payload`,
    100; each text at most 57 bytes (a one-byte serial type, which the decoder reads)."""
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA page_size = {page_size}")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER, " + ", ".join(f"t{i} TEXT" for i in range(TEXTS)) + ")")
    for a, size in ((-5, 100), (-200, payload), (-(1 << 40), 100)):
        head = 1 + 2 + TEXTS                        # header size byte and one serial type per column
        ints = {-5: 1, -200: 2, -(1 << 40): 6}[a] + 8
        left = size - head - ints
        texts = [min(57, max(0, left - 57 * i)) for i in range(TEXTS)]
        assert sum(texts) == left, size
        con.execute(f"INSERT INTO t VALUES ({', '.join('?' * (TEXTS + 2))})", (a, -(1 << 62), *("x" * n for n in texts)))
    con.commit()
    got = con.execute("SELECT max(mx_payload) FROM dbstat WHERE name = 't'").fetchone()[0]
    con.close()
    return got


def thresholds(page_size):
    """SQLite's: the largest payload kept on a table leaf (usable - 35) and the smallest
    local part of one that spills (min-local), with no reserved bytes."""
    usable = page_size
    return usable - 35, (usable - 12) * 32 // 255 - 23, usable


@pytest.mark.parametrize("page_size", [512, 1024])
def test_payloads_around_the_overflow_thresholds(tmp_path, page_size):
    most, min_local, usable = thresholds(page_size)
    stays = [most - 1, most]
    # just past: the local part is min-local (min_local + (P - min_local) % (usable - 4) > most);
    # further: a local part above min-local; and the smallest whose local part is min-local again
    spills = [most + 1, most + 2, min_local + (usable - 4) + 53, min_local + (usable - 4)]
    for p in stays + spills:
        path = str(tmp_path / f"p{page_size}_{p}.sqlite")
        assert spill_table(path, page_size, p) == p          # SQLite's own payload size (dbstat)
        if p in stays:
            assert pages(path, "t", ["a", "b"])[0] == sql(path, "t", ["a", "b"]) == \
                [(-5, -(1 << 62)), (-200, -(1 << 62)), (-(1 << 40), -(1 << 62))]
        else:
            with pytest.raises(S.Unsupported, match="overflow"):
                pages(path, "t", ["a", "b"])
