"""The GPU slots of a sweep, planned where Snakemake parses the workflow, as plain data: for
a local GPU sweep, each GPU's measure cores (jobs.slots.plan), the cores everything else
runs on, how many profiling jobs may be in flight, and how many of them may be Nsight
Compute jobs. The Snakefile applies it (pins its own process to the other cores, registers
the `gpu` and `ncu_counters` resources)."""
from __future__ import annotations

from dataclasses import dataclass

from fusionlab.jobs import slots
from fusionlab.plan import sweep

# Nsight Compute jobs in flight on one host: one holds the host's counters lock
# (jobs.slots.take_counters) and claims a GPU and collects, one has done its imports and
# waits for the lock; a third would only wait too, holding a `gpu` resource unit that a
# measurement could use
NCU_IN_FLIGHT = 2


@dataclass(frozen=True)
class SlotsPlan:
    slots: list            # jobs.slots.Slot per GPU
    other_cpus: list       # Snakemake and every job it starts run here
    in_flight: int         # profiling jobs at once: GPUs x jobs_per_gpu
    ncu_in_flight: int = NCU_IN_FLIGHT   # of those, Nsight Compute jobs (the host has one counters lock)

    def describe(self, gpu_resource: int | None = None, ncu_resource: int | None = None) -> str:
        return (f"{len(self.slots)} GPU slot(s) {slots.format_slots(self.slots)} (GPU=measure cores), up to "
                f"{gpu_resource if gpu_resource is not None else self.in_flight} profiling jobs in flight "
                f"({ncu_resource if ncu_resource is not None else self.ncu_in_flight} of them Nsight Compute at most); "
                f"everything else on cores {slots.format_cpus(self.other_cpus)}")


def plan(cfg: dict, device: str, cpus: list, *, local: bool = True, regenerate: bool = False,
         main_process: bool = True) -> SlotsPlan | None:
    """The slots of a local GPU sweep over `cpus` (the process's affinity); None where there
    are none: a CPU run, a cluster (its scheduler assigns GPUs), regenerating, a job's own
    process (the main process planned the slots). ConfigError for a bad `gpus` key."""
    if regenerate or device != "cuda" or not local or not main_process:
        return None
    gpus = sweep.gpu_indices(cfg["gpus"])
    planned, rest = slots.plan(gpus, sorted(cpus))
    return SlotsPlan(planned, rest, len(gpus) * cfg["jobs_per_gpu"])
