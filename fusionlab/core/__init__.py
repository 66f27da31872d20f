"""What every layer shares, defined once (no torch, no pandas): the NVTX contract (ranges),
atomic file writes (io), the sweep's fixed axes (axes), a run's size labels (sizes), one
owner per run folder (owner), a workflow job's log (joblog), the Nsight Compute passes
(ncu_passes), a kernel's class and precision (kernel_class) and the paired speedup's
interval (ratios)."""
