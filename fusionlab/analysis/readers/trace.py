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
- gpus:    device id -> that GPU's limits (TARGET_INFO_GPU's columns of
  analysis.occupancy.DEVICE_FIELDS, as nsys read them from the device); {} without
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

RANGE_COLUMNS = ["name", "domain", "start", "end", "tid"]
API_COLUMNS = ["name", "start", "end", "tid", "is_launch"]
KERNEL_COLUMNS = ["name", "start", "end", "tid", "launch_start", "launch_end", "launch_name", "stream", "full_name"]
RESOURCE_COLUMNS = ["registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes", "local_mem_per_thread_bytes",
                    "block_threads", "grid_blocks"]
CONFIG_COLUMNS = ["device_id"] + RESOURCE_COLUMNS   # one launch's configuration (module doc)
NO_VALUE = -1                                       # a configuration value the export does not record


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
