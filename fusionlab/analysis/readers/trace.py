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
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
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
