"""One normalised view of a profile, whichever tool recorded it.

All times are integer nanoseconds on the profile's own clock.
- ranges:  name, domain, start, end, tid            (NVTX push/pop or record_function)
- api:     name, start, end, tid, is_launch          (CUDA runtime/driver calls)
- kernels: name, start, end, tid, launch_start, launch_end, launch_name, stream, full_name
  (name: the short name nsys stats shows; full_name: demangled, with template arguments)
  (each kernel joined to the API call that launched it through its correlation id; on
  the CPU backend, a "kernel" is a leaf operator and is its own launch);
  an nsys export's kernels also carry CONFIG_COLUMNS, each launch's configuration:
  device_id, registers_per_thread, static_smem_bytes, dynamic_smem_bytes,
  local_mem_per_thread_bytes (spills), block_threads (blockX*blockY*blockZ), grid_blocks
  (gridX*gridY*gridZ); NO_VALUE (-1) where the export lacks the column
- gpus:    device id -> that GPU's limits (TARGET_INFO_GPU's columns of DEVICE_FIELDS,
  as nsys read them from the device); {} without

Chunks(trace) reads a Trace as the streamed analysis (analysis.run.stream) reads an nsys
export (nsys_sqlite.Report): ranges and facts, kernels and launch calls as int64 arrays.
RangeTable holds ranges as columns (a streamed export's, without pandas) and Instances one
range name's instances.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

RANGE_COLUMNS = ["name", "domain", "start", "end", "tid"]
API_COLUMNS = ["name", "start", "end", "tid", "is_launch"]
KERNEL_COLUMNS = ["name", "start", "end", "tid", "launch_start", "launch_end", "launch_name", "stream", "full_name"]
RESOURCE_COLUMNS = ["registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes", "local_mem_per_thread_bytes",
                    "block_threads", "grid_blocks"]
CONFIG_COLUMNS = ["device_id"] + RESOURCE_COLUMNS   # one launch's configuration (module doc)
NO_VALUE = -1                                       # a configuration value the export does not record
# TARGET_INFO_GPU columns of a GPU's limits (Trace.gpus; analysis.run.occupancy reads them;
# nsys 2023+, older exports lack some)
DEVICE_FIELDS = ("maxWarpsPerSm", "maxBlocksPerSm", "maxRegistersPerSm", "maxRegistersPerBlock",
                 "maxShmemPerSm", "maxShmemPerBlockOptin", "threadsPerWarp", "computeMajor", "computeMinor")
CHUNK = 1 << 14   # rows per chunk of Chunks.kernel_chunks and launch_chunks


class ReportError(Exception):
    """A profile that cannot be analysed; str(e) is a one-line reason naming the file."""


def empty(columns) -> pd.DataFrame:
    import pandas as pd
    return pd.DataFrame({c: pd.Series(dtype="object" if c in ("name", "domain", "launch_name", "full_name") else "int64")
                         for c in columns})


@dataclass
class Trace:
    source: str
    backend: str          # "nsys" or "torch"
    device: str           # "cuda" or "cpu"
    ranges: pd.DataFrame
    api: pd.DataFrame = field(default_factory=lambda: empty(API_COLUMNS))
    kernels: pd.DataFrame = field(default_factory=lambda: empty(KERNEL_COLUMNS))
    tool_version: str | None = None
    gpu: str | None = None
    gpus: dict = field(default_factory=dict)


class Instances:
    """One range name's instances as int64 arrays start, end, tid (RangeTable's order)."""

    def __init__(self, start: np.ndarray, end: np.ndarray, tid: np.ndarray):
        self.start, self.end, self.tid = start, end, tid

    def __len__(self) -> int:
        return len(self.start)


def _null(v) -> bool:
    return v is None or v != v


class RangeTable:
    """Ranges (RANGE_COLUMNS) as columns: name and domain lists, start, end and tid int64
    arrays; frame() is the DataFrame."""

    def __init__(self, name: list, domain: list, start, end, tid):
        self.name, self.domain = list(name), list(domain)
        self.start, self.end, self.tid = (np.asarray(x, np.int64).reshape(-1) for x in (start, end, tid))

    @classmethod
    def of(cls, frame) -> "RangeTable":
        return cls(frame["name"].tolist(), frame["domain"].tolist(), frame["start"].to_numpy(np.int64),
                   frame["end"].to_numpy(np.int64), frame["tid"].to_numpy(np.int64))

    @classmethod
    def of_profile(cls, profile) -> "RangeTable":
        """A profile's ranges (its own range_table where it keeps one)."""
        table = getattr(profile, "range_table", None)
        return table if table is not None else cls.of(profile.ranges)

    def __len__(self) -> int:
        return len(self.start)

    def frame(self) -> pd.DataFrame:
        import pandas as pd
        if not len(self):
            return empty(RANGE_COLUMNS)
        rows = zip(self.name, self.domain, self.start.tolist(), self.end.tolist(), self.tid.tolist())
        return pd.DataFrame(list(rows), columns=RANGE_COLUMNS).astype({"start": "int64", "end": "int64", "tid": "int64"})

    def plus(self, rows: list[tuple]) -> "RangeTable":
        """This table with rows (name, domain, start, end, tid) appended."""
        if not rows:
            return self
        n, d, s, e, t = zip(*rows)
        return RangeTable(self.name + list(n), self.domain + list(d), np.r_[self.start, s], np.r_[self.end, e],
                          np.r_[self.tid, t])

    def keys(self) -> list[tuple[str, str | None]]:
        """(name, domain or None) of every range name, by domain then name (fields.range_keys:
        a range without a name or domain is left out, as pandas' groupby does)."""
        pairs = {(d, n) for d, n in zip(self.domain, self.name) if not _null(d) and not _null(n)}
        return [(n, d or None) for d, n in sorted(pairs)]

    def rows(self, name: str, domain: str | None = None) -> np.ndarray:
        """Indices of the ranges named name (of that domain, where one is given)."""
        m = [x == name for x in self.name]
        if domain is not None:
            m = [a and d == domain for a, d in zip(m, self.domain)]
        return np.flatnonzero(np.asarray(m, bool)) if len(m) else np.zeros(0, np.int64)

    def instances(self, name: str, domain: str | None) -> Instances:
        """fields.instances: the range's instances (of that domain, where the table has one)."""
        if domain is not None and domain in self.domain:
            i = self.rows(name, domain)
        else:
            i = self.rows(name)
        return Instances(self.start[i], self.end[i], self.tid[i])


def join_launches(kernels: pd.DataFrame, api: pd.DataFrame) -> pd.DataFrame:
    """Join each kernel to the launch call with its correlation id (cuda_kern_exec);
    a kernel whose launch call was not recorded cannot be attributed to a range."""
    launches = api.loc[api["is_launch"].astype(bool), ["correlation", "start", "end", "tid", "name"]].rename(
        columns={"start": "launch_start", "end": "launch_end", "name": "launch_name"})
    k = kernels.merge(launches.drop_duplicates("correlation"), on="correlation", how="left")
    return k.dropna(subset=["launch_start"]).astype({"launch_start": "int64", "launch_end": "int64", "tid": "int64"})


class Chunks:
    """A Trace with nsys_sqlite.Report's streaming interface: source, backend, device,
    ranges, tool_version, gpu and gpus are the Trace's; kernel_chunks() and launch_chunks()
    give its kernels and launch calls as Report's do, with name ids that strings() reads.
    in_memory: every row is at hand (kernel tables sum durations as pandas does)."""
    columnar = False
    in_memory = True

    def __init__(self, trace: Trace):
        self.trace = trace
        for name in ("source", "backend", "device", "ranges", "tool_version", "gpu", "gpus"):
            setattr(self, name, getattr(trace, name))
        import pandas as pd
        k = trace.kernels
        self._kernels = k.sort_values(["start", "end", "launch_start"], kind="stable", ignore_index=True)
        codes, self._strings = pd.factorize(pd.concat([self._kernels["name"], self._kernels["full_name"]],
                                                      ignore_index=True))
        self._ids = codes.astype(np.int64).reshape(2, -1).T

    def kernel_chunks(self, names: bool = False, chunk: int | None = None, config: bool = False):
        """Kernels as int64 arrays of columns start, end, launch_start, launch_end, tid
        [, name, full_name ids (strings())] [, CONFIG_COLUMNS (with names; config, where the
        Trace has them)], ordered by (start, end, launch_start), CHUNK rows at a time."""
        k = self._kernels
        parts = [k[["start", "end", "launch_start", "launch_end", "tid"]].to_numpy(np.int64)]
        if names:
            parts.append(self._ids)
            if config and set(CONFIG_COLUMNS) <= set(k.columns):
                parts.append(k[CONFIG_COLUMNS].to_numpy(np.int64))
        rows = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
        step = chunk or CHUNK
        for i in range(0, len(rows), step):
            yield rows[i:i + step]

    def launch_chunks(self, chunk: int | None = None):
        """The launch calls (api rows with is_launch) as int64 arrays of columns start, end,
        tid, CHUNK rows at a time."""
        a = self.trace.api
        rows = a.loc[a["is_launch"].astype(bool), ["start", "end", "tid"]].to_numpy(np.int64)
        step = chunk or CHUNK
        for i in range(0, len(rows), step):
            yield rows[i:i + step]

    def strings(self, ids) -> dict[int, str]:
        """The kernel names of name ids from kernel_chunks(names=True)."""
        return {int(i): self._strings[int(i)] for i in ids}
