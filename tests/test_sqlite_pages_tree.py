"""readers.sqlite_pages on the interior pages of a table of three levels, each edited to
what SQLite calls malformed or reads as it is: cell counts one and two past the file's
pages and at the page's end, child cells at the bounds of where a cell may lie, and child
pointers to the schema's page, to the root itself or to a page already reached; each
refusal with its reason."""
import sqlite3

import pytest

from test_sqlite_pages_cells import decoded, move_cell, patch, refused, sql, u16


def deep(path: str) -> tuple[int, list[int], int]:
    """A table of three levels on 512-byte pages (no free page): its root, the interior
    pages under it and the file's page count."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 512")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, -i) for i in range(8000)])
    con.commit()
    got = con.execute("SELECT pageno, pagetype, path FROM dbstat WHERE name = 't' ORDER BY path").fetchall()
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    con.close()
    mid = [p for p, t, q in got if t == "internal" and q.count("/") == 2]
    assert got[0][1] == "internal" and mid and pages == len(got) + 1
    return got[0][0], mid, pages


def interior(path: str, page: int, ps: int = 512) -> bytes:
    with open(path, "rb") as f:
        f.seek((page - 1) * ps)
        return f.read(ps)


@pytest.mark.parametrize("more, why", [(1, "a b-tree page reached twice"),
                                       (2, "more b-tree pages than the file has")])
def test_an_interior_cell_count_one_or_two_past_the_files_pages(tmp_path, more, why):
    """Cells added to an interior page of the second level: with one more (a copy of its
    last pointer), the next level and those above are as many pages as the file has, and a
    page is reached twice; with two (each a new cell whose child lies past the file's end),
    one page more than the file has, refused before the next level is read."""
    path = str(tmp_path / "t.sqlite")
    root, mid, pages = deep(path)
    b = interior(path, mid[0])
    n, start = u16(b, 3), u16(b, 5)
    assert 12 + 2 * (n + more) <= start - 5      # the new pointers and cell in the free space
    at = (mid[0] - 1) * 512
    patch(path, at + 3, (n + more).to_bytes(2, "big"))
    if more == 1:
        patch(path, at + 12 + 2 * n, b[12 + 2 * (n - 1):12 + 2 * n])
    else:
        patch(path, at + start - 5, (pages + 5).to_bytes(4, "big") + b"\x01")
        patch(path, at + 5, (start - 5).to_bytes(2, "big"))
        patch(path, at + 12 + 2 * n, (start - 5).to_bytes(2, "big") * more)
    with refused(why):
        decoded(path, ["a"])


def test_an_interior_cell_count_at_its_pages_end(tmp_path):
    path = str(tmp_path / "t.sqlite")
    root, mid, pages = deep(path)
    patch(path, (root - 1) * 512 + 3, ((512 - 12) // 2 + 1).to_bytes(2, "big"))
    with refused("a cell count past its page"):
        decoded(path, ["a"])
    patch(path, (root - 1) * 512 + 3, ((512 - 12) // 2).to_bytes(2, "big"))
    with refused("more b-tree pages than the file has"):
        decoded(path, ["a"])


def test_interior_cell_pointers_at_their_bounds(tmp_path):
    """A child's cell right after the pointer array, and at usable - 5 (4 bytes of page
    number and a 1-byte key): read as SQLite reads them; one byte outside either: refused."""
    path = str(tmp_path / "t.sqlite")
    root, mid, pages = deep(path)
    want = sql(path, ["a"])
    b = interior(path, root)
    n = u16(b, 3)
    move_cell(path, root, 1, 12 + 2 * n, head=12, ps=512)
    assert decoded(path, ["a"]) == sql(path, ["a"]) == want
    patch(path, (root - 1) * 512 + 12 + 2, (12 + 2 * n - 1).to_bytes(2, "big"))
    with refused("a cell pointer outside its page"):
        decoded(path, ["a"])
    path = str(tmp_path / "end.sqlite")
    deep(path)
    b = interior(path, mid[0])
    first = u16(b, 12)                      # the first cell written: at the page's end, a 1-byte key
    assert first == 512 - 5 and b[first + 4] < 0x80
    assert decoded(path, ["a"]) == want
    patch(path, (mid[0] - 1) * 512 + 12, (512 - 4).to_bytes(2, "big"))
    with refused("a cell pointer outside its page"):
        decoded(path, ["a"])


@pytest.mark.parametrize("child, why", [("schema", "a b-tree page reached twice"),
                                        ("root", "a b-tree page reached twice"),
                                        ("twice", "a b-tree page reached twice"),
                                        ("past", "a page past the end of the file"),
                                        ("zero", "a page past the end of the file")])
def test_a_child_page_reached_twice_or_outside_the_file(tmp_path, child, why):
    """A child pointer of the root to the schema's page 1, to the root itself, to the page
    its next cell points to, to the page after the file's last, or to page 0."""
    path = str(tmp_path / "t.sqlite")
    root, mid, pages = deep(path)
    b = interior(path, root)
    cell = u16(b, 12)
    to = {"schema": 1, "root": root, "twice": int.from_bytes(b[u16(b, 14):u16(b, 14) + 4], "big"),
          "past": pages + 1, "zero": 0}[child]
    patch(path, (root - 1) * 512 + cell, to.to_bytes(4, "big"))
    with refused(why):
        decoded(path, ["a"])
