"""Integer columns of an SQLite rowid table read straight from the file's b-tree pages
with numpy (the SQLite file format, https://www.sqlite.org/fileformat.html): the table's
leaf pages found by walking its interior pages, each leaf's cells located through its
cell pointer array, and every row's values decoded at once per batch of pages, without
stepping SQLite row by row.

columns(path, table, names) yields, in rowid order (the b-tree's order, as `ORDER BY
rowid`), one pair per batch of BATCH bytes of leaf pages: a list with, for each named
column, a pair (values as int64, NULL mask; a NULL's value 0), and the rowid of the
batch's last row (None: the batch holds none). It raises Unsupported (before or while
yielding) where the file holds what it does not decode: a table with a column that
aliases the rowid or a hidden column, a WAL-mode file or one with a journal beside it, a
record with a multi-byte header or serial type or with fewer columns than the table, a
rowid of 9 bytes (negative, or 2**56 and past), a value of a named column that is not an
integer or NULL, a row that spills to overflow
pages, a b-tree with leaves at several depths; and where the file is what SQLite calls
malformed, or may be: a header field SQLite does not read as written, a page reached twice,
more b-tree pages than the file has, a non-root leaf with no cells, a cell count or cell
pointer outside its page, a payload size that disagrees with its record. Callers read
through SQLite from the first row not given (`ORDER BY rowid ... OFFSET`, the same walk
of the b-tree), and SQLite answers or refuses. Memory: one batch of pages and its rows'
columns, and the table's leaf page numbers (at most the file's pages).

uri(path): the URI that opens a file read-only and as immutable (no lock taken, no -wal or
-shm made beside it), or read-only where a write-ahead log lies beside it (SQLite reads it).
"""
from __future__ import annotations

import os
import sqlite3
import stat
import urllib.parse

import numpy as np

BATCH = 2 << 20                # bytes of leaf pages per batch (a batch's columns stay in the CPU's caches)
LEAF, INTERIOR = 13, 5         # b-tree page types of a table
# bytes of an integer value by serial type (0 NULL, 1-6 integers, 7 float, 8 and 9 the integers 0 and 1)
_SIZES = np.array([0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0], np.int64)


class Unsupported(Exception):
    """The file or table holds what columns() does not decode (module doc)."""


def uri(path: str) -> str:
    """The file's read-only SQLite URI (module doc)."""
    name = urllib.parse.quote(os.path.abspath(path))
    return f"file:{name}?mode=ro" + ("" if os.path.exists(path + "-wal") else "&immutable=1")


def _layout(path: str, table: str) -> tuple[int, dict[str, int]]:
    """(root page, position of each column in the table's records)."""
    con = sqlite3.connect(uri(path), uri=True)
    try:
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        cols = con.execute(f"PRAGMA table_xinfo({table})").fetchall()
    finally:
        con.close()
    if root is None or not root[0]:
        raise Unsupported(f"{table}: no such table")
    if any(c[5] for c in cols) or any(c[6] for c in cols):     # a primary key (maybe the rowid) or hidden column
        raise Unsupported(f"{table}: a primary key or hidden column")
    return int(root[0]), {c[1]: i for i, c in enumerate(cols)}


class _File:
    """The file, read a batch of pages at a time into a buffer (os.preadv: the page cache's
    copy, not a mapping, so the resident memory stays one batch)."""

    def __init__(self, path: str):
        if os.path.exists(path + "-journal") or os.path.exists(path + "-wal"):
            raise Unsupported("a journal beside the file (a write under way)")
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        head = os.pread(self.fd, 100, 0) if stat.S_ISREG(os.fstat(self.fd).st_mode) else b""
        ps = int.from_bytes(head[16:18], "big") if len(head) == 100 else 0
        ps = 65536 if ps == 1 else ps
        why = ("not a regular SQLite file" if len(head) < 100 else
               "a WAL-mode file" if head[18] == 2 or head[19] == 2 else
               "a file format version SQLite reads otherwise" if head[18] != 1 or head[19] != 1 else
               "a page size SQLite refuses" if ps < 512 or ps & (ps - 1) else
               "payload fractions SQLite refuses" if tuple(head[21:24]) != (64, 32, 32) else
               "a reserved space SQLite refuses" if ps - head[20] < 480 else None)
        if why:
            os.close(self.fd)
            raise Unsupported(why)
        self.page_size = ps
        self.usable = self.page_size - head[20]
        self.pages = os.fstat(self.fd).st_size // self.page_size

    def read(self, pages: np.ndarray, buf: np.ndarray | None = None) -> np.ndarray:
        """The pages (numbers from 1), in the order given, one after another (into buf,
        where given)."""
        ps = self.page_size
        buf = np.empty(len(pages) * ps, np.uint8) if buf is None else buf[:len(pages) * ps]
        if len(pages) and (int(pages.min()) < 1 or int(pages.max()) > self.pages):
            raise Unsupported("a page past the end of the file")
        view = memoryview(buf)
        run = np.flatnonzero(np.diff(pages) != 1) + 1
        for a, b in zip(np.r_[0, run].tolist(), np.r_[run, len(pages)].tolist()):
            if os.preadv(self.fd, [view[a * ps:b * ps]], (int(pages[a]) - 1) * ps) != (b - a) * ps:
                raise Unsupported("a page past the end of the file")
        return buf

    def close(self):
        os.close(self.fd)


def _u16(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    return (buf[at].astype(np.int64) << 8) | buf[at + 1]


def _leaves(f: _File, root: int) -> np.ndarray:
    """The table's leaf pages in key order (the interior pages walked level by level); each
    page reached once, and no more pages than the file holds (Unsupported otherwise)."""
    level = np.array([root], np.int64)
    ps, usable = f.page_size, f.usable
    seen = np.zeros(f.pages + 1, bool)
    seen[1] = True           # the schema's page
    total = 0
    while True:
        if (level < 1).any() or (level > f.pages).any():
            raise Unsupported("a page past the end of the file")
        total += len(level)
        if total > f.pages:
            raise Unsupported("more b-tree pages than the file has")
        if seen[level].any() or len(np.unique(level)) != len(level):
            raise Unsupported("a b-tree page reached twice")
        seen[level] = True
        if f.read(level[:1])[0] == LEAF:      # the leaf level (each leaf's kind checked as it is read)
            return level
        buf = f.read(level)
        base = np.arange(len(level), dtype=np.int64) * ps
        if not (buf[base] == INTERIOR).all():
            raise Unsupported("a b-tree page of another kind, or leaves at several depths")
        n = _u16(buf, base + 3)
        if (12 + 2 * n > usable).any():
            raise Unsupported("a cell count past its page")
        if total + int(n.sum()) + len(n) > f.pages:
            raise Unsupported("more b-tree pages than the file has")
        page = np.repeat(np.arange(len(level)), n + 1)
        i = np.arange(len(page)) - np.repeat(np.cumsum(n + 1) - (n + 1), n + 1)
        at = base[page] + 12 + 2 * i            # cell pointers; the last slot of each page is its right child
        last = i == n[page]
        off = _u16(buf, np.where(last, base[page], at))
        if ((~last) & ((off < 12 + 2 * n[page]) | (off > usable - 5))).any():
            raise Unsupported("a cell pointer outside its page")
        cell = np.where(last, base[page] + 8, base[page] + off)
        b = buf[cell[:, None] + np.arange(4)].astype(np.int64)
        level = (b[:, 0] << 24) | (b[:, 1] << 16) | (b[:, 2] << 8) | b[:, 3]


def _varint_len(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Lengths of the varints at `at` (at most 8 bytes long)."""
    n = np.ones(len(at), np.int64)
    more = buf[at] >= 0x80
    for k in range(1, 8):
        if not more.any():
            return n
        n += more
        more &= buf[at + k] >= 0x80
    if more.any():
        raise Unsupported("a 9-byte varint")
    return n


def _payload(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Values of the varints at `at` of at most 3 bytes (a longer one reads as 2**21)."""
    b0 = buf[at]
    val = b0.astype(np.int64)
    big = b0 >= 0x80
    if big.any():
        j = np.flatnonzero(big)
        b1, b2 = buf[at[j] + 1].astype(np.int64), buf[at[j] + 2].astype(np.int64)
        val[j] = np.where(b1 >= 0x80, np.where(b2 >= 0x80, 1 << 21, ((b0[j] & 0x7F).astype(np.int64) << 14)
                                                | ((b1 & 0x7F) << 7) | b2), ((b0[j] & 0x7F).astype(np.int64) << 7) | b1)
    return val


# per serial type (a one-byte varint): its value's size in bytes; whether it is not an integer or NULL
_SIZE = np.array([_SIZES[t] if t < 12 else (t - 12) >> 1 for t in range(256)], np.int64)
_NOT_INT = np.array([t == 7 or t >= 10 for t in range(256)])


class _Pages:
    """One reused buffer of leaf pages and the decoding of their cells."""

    def __init__(self, f: _File, positions: list[int], columns: int, several: bool = False):
        self.f, self.positions, self.columns = f, positions, columns
        self.several = several     # the table has more than one leaf: none may be empty
        self.want = set(positions)
        self.buf = None

    def rows(self, pages: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """The columns at `positions` of every cell of the leaf pages."""
        try:
            return self._rows(pages)
        except IndexError:          # a varint or value running past the pages read
            raise Unsupported("a cell running past its page") from None

    def _rows(self, pages: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        f, ps, usable = self.f, self.f.page_size, self.f.usable
        if self.buf is None or len(self.buf) < len(pages) * ps:
            self.buf = np.empty(len(pages) * ps, np.uint8)
        buf = f.read(pages, self.buf)
        self._pages = len(pages)
        base = np.arange(len(pages), dtype=np.int64) * ps
        if not (buf[base] == LEAF).all():
            raise Unsupported("a leaf of another kind")
        n = _u16(buf, base + 3)
        if (8 + 2 * n > usable).any():
            raise Unsupported("a cell count past its page")
        if self.several and (n == 0).any():
            raise Unsupported("a non-root leaf page with no cells (SQLite: malformed)")
        page = np.repeat(base, n)
        i = np.arange(len(page), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        off = _u16(buf, page + 8 + 2 * i)
        if ((off < 8 + 2 * np.repeat(n, n)) | (off > usable - 4)).any():
            raise Unsupported("a cell pointer outside its page")
        cell = page + off
        b0 = np.take(buf, cell)
        if len(b0) and int(b0.max()) < 0x80:     # one-byte payload sizes: no row spills
            size, rec = b0.astype(np.int64), cell + 1
        else:
            size = _payload(buf, cell)
            if len(cell) and int(size.max()) > usable - 35:
                raise Unsupported("a row on overflow pages")
            rec = cell + _varint_len(buf, cell)
        # the rowid: its varint's length grows with it, and the rows come in rowid order
        ends = _varint_len(buf, rec[[0, -1]]) if len(rec) else None
        rec += ends[0] if ends is not None and ends[0] == ends[1] else _varint_len(buf, rec)
        if ((rec + size) > page + usable).any():
            raise Unsupported("a payload past its page")
        head = np.take(buf, rec)
        if len(head) and (head != self.columns + 1).any():
            raise Unsupported("a record with a multi-byte serial type or header, or with fewer columns than the table")
        end = rec + head       # the end of the values before column j
        out = {}
        window = np.ndarray((len(buf) - 7,), ">i8", buf, 0, (1,))     # 8 bytes big-endian at every offset
        for j in range(self.columns):
            t = np.take(buf, rec + (1 + j))
            if len(t) and int(t.max()) >= 0x80:
                raise Unsupported("a multi-byte serial type")
            size_j = np.take(_SIZE, t)
            end += size_j
            if j in self.want:
                if np.take(_NOT_INT, t).any():
                    raise Unsupported("a value that is not an integer")
                out[j] = _value(buf, window, end, size_j, t)
        if (end != rec + size).any():
            raise Unsupported("a payload size that disagrees with its record (SQLite: malformed)")
        return [out[p] for p in self.positions]

    def last_rowid(self) -> int | None:
        """The rowid of the last cell of the last page read (None: no cell)."""
        ps, buf = self.f.page_size, self.buf
        for n in range(self._pages - 1, -1, -1):
            cells = _u16(buf, np.array([n * ps + 3]))[0]
            if not cells:
                continue
            at = n * ps + int(_u16(buf, np.array([n * ps + 8 + 2 * (cells - 1)]))[0])
            while buf[at] >= 0x80:      # the payload size
                at += 1
            val = 0
            for k in range(1, 10):
                b = int(buf[at + k])
                if k == 9:
                    val = (val << 8) | b
                    break
                val = (val << 7) | (b & 0x7F)
                if b < 0x80:
                    break
            return val - (1 << 64) if val >= 1 << 63 else val
        return None


def _value(buf: np.ndarray, window: np.ndarray, end: np.ndarray, size: np.ndarray,
           t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(value, NULL mask) of integers of serial types t ending at `end`."""
    lo, hi = (int(size.min()), int(size.max())) if len(size) else (1, 1)
    if lo == hi == 1:          # one byte each
        return np.take(buf, end - 1).view(np.int8).astype(np.int64), np.zeros(len(end), bool)
    if lo == hi == 0:          # NULL, 0 or 1
        return (t == 9).astype(np.int64), t == 0
    val = window[end - 8].astype(np.int64)
    if lo == hi:               # one size: no NULL, no 0 or 1 stored in the type
        if lo < 8:
            val <<= 64 - 8 * lo
            val >>= 64 - 8 * lo
        return val, np.zeros(len(val), bool)
    shift = (64 - 8 * size) & 63
    val <<= shift
    val >>= shift
    zero = size == 0
    if zero.any():
        val[zero] = t[zero] == 9
    return val, t == 0


def columns(path: str, table: str, names: list[str], batch: int = BATCH):
    """Batches of the named columns (module doc)."""
    root, where = _layout(path, table)
    missing = [c for c in names if c not in where]
    if missing:
        raise Unsupported(f"{table} has no column {missing[0]}")
    positions = [where[c] for c in names]
    f = _File(path)
    try:
        leaves = _leaves(f, root)
        reader = _Pages(f, positions, len(where), len(leaves) > 1)
        pages = max(1, batch // f.page_size)
        for i in range(0, len(leaves), pages):
            cols = reader.rows(leaves[i:i + pages])
            yield cols, reader.last_rowid()
    finally:
        f.close()
