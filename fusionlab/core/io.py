"""Atomic file writes: a killed or failing writer never leaves half a file under the real name.
Bounded reads: a file read whole (a JSON record, a text, a CSV table) is a regular file
(never a pipe or device, which could hang or never end), of at most a stated size, and
gzip at most a stated size unpacked;
JSON nested past what the parser reads is a ValueError, not a RecursionError.
Text for a terminal: printable() shows a control character (an escape sequence, a
right-to-left override) as its escape, never as what it does to the terminal."""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import stat
import zlib

RECORD_BYTES = 64 << 20          # a run's JSON record (run.json, metrics.json, ...), at most
TABLE_BYTES = int(os.environ.get("FUSIONLAB_MAX_TABLE_BYTES") or 4 << 30)   # a table (CSV), at most
GZIP_RATIO = 100                 # gzip unpacked to at most this times its packed size (and its cap)


@contextlib.contextmanager
def atomic_path(path: str):
    """Yield a temporary name next to path (same extension, so writers that pick the
    format by it still work); rename it to path when the block ends. An OSError in the
    block (a full disk, a read-only folder) names path: `PATH: cannot be written (...)`,
    and path is left as it was."""
    root, ext = os.path.splitext(path)
    tmp = f"{root}.tmp{os.getpid()}{ext}"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        yield tmp
        os.replace(tmp, path)
    except OSError as e:
        if str(path) in str(e):
            raise
        raise type(e)(e.errno, f"{path}: cannot be written ({e.strerror or e})") from None
    finally:
        with contextlib.suppress(OSError):
            if os.path.exists(tmp):
                os.remove(tmp)


def read_bounded(path: str, cap: int) -> bytes:
    """The bytes of the regular file at path, gunzipped where it starts with gzip's magic;
    ValueError (one line, the number in it) past cap bytes, or past GZIP_RATIO times its
    packed size unpacked; OSError where it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        _regular(fd, cap)
        data = f.read(cap + 1)
    if data[:2] != b"\x1f\x8b":
        return data
    most = min(cap, max(1 << 20, GZIP_RATIO * len(data)))
    out = bytearray()
    try:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        rest = data
        while rest:
            out += d.decompress(rest, most + 1 - len(out))
            if len(out) > most:
                raise ValueError(f"gzip unpacking to over {most} bytes (the cap: {GZIP_RATIO} times its size, "
                                 f"at most {cap})")
            rest = d.unconsumed_tail
            if d.eof:
                if d.unused_data[:2] == b"\x1f\x8b":    # a further gzip member
                    d, rest = zlib.decompressobj(16 + zlib.MAX_WBITS), d.unused_data
                else:
                    break
    except zlib.error as e:
        raise gzip.BadGzipFile(f"not a gzip file ({e})") from None
    return bytes(out)


def _regular(fd: int, cap: int) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file (a pipe or device)")
    if st.st_size > cap:
        raise ValueError(f"{st.st_size} bytes, over the cap of {cap} bytes")


def read_text(path: str, cap: int = RECORD_BYTES) -> str:
    """The text of the regular file at path (read_bounded; UTF-8, undecodable bytes
    replaced)."""
    return read_bounded(path, cap).decode("utf-8", errors="replace")


def read_csv(path: str, cap: int = TABLE_BYTES, **kw):
    """pandas.read_csv of the regular file at path, at most cap bytes (a gzip, by its magic
    bytes, at most cap unpacked: read_bounded); ValueError (one line, the number in it)
    for a pipe, a device or a file past the cap, and as pandas raises them (ParserError,
    EmptyDataError, UnicodeDecodeError); OSError where it cannot be opened."""
    import pandas as pd
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        _regular(fd, cap)
        if f.read(2) != b"\x1f\x8b":
            f.seek(0)
            return pd.read_csv(f, **kw)
    return pd.read_csv(io.BytesIO(read_bounded(path, cap)), **kw)


def load_json(path: str, cap: int = RECORD_BYTES):
    """The JSON document at path (read_bounded); ValueError for bad JSON, a file past the
    cap, or nesting deeper than the parser reads; OSError where it cannot be opened."""
    data = read_bounded(path, cap)
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested deeper than the parser reads") from None


def load_json_object(path: str, error: type[Exception], what: str = "a JSON object") -> dict:
    """The JSON object at path (load_json); `error` with one line naming the file where it
    cannot be read ("cannot be read (...)") or is not an object ("not <what>")."""
    try:
        obj = load_json(path)
    except (OSError, ValueError) as e:
        raise error(f"{path}: cannot be read ({type(e).__name__}: {' '.join(str(e).split())[:200]})") from None
    if not isinstance(obj, dict):
        raise error(f"{path}: not {what}")
    return obj


def read_json(path: str) -> dict | None:
    """The JSON object at path, or None when it is missing, unreadable, half written, past
    RECORD_BYTES or not an object (load_json)."""
    try:
        obj = load_json(path)
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def write_json_atomic(path: str, obj: dict) -> None:
    """obj as indented JSON at path, written atomically."""
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True, default=str)
        f.write("\n")


def printable(text, lines: bool = False) -> str:
    """str(text) with each character that is not printable (Python's str.isprintable: control
    and format characters, newlines included) written as its escape (\\x1b, \\u202e);
    lines: newlines kept (a table of several lines)."""
    if lines:
        return "\n".join(printable(line) for line in str(text).split("\n"))
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
