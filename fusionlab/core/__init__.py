"""What every layer shares, defined once (no torch; pandas only where io reads a table): the
NVTX contract (ranges), atomic file writes, bounded reads and text for a terminal (io), the
commands' one-line argument errors (args), the sweep's fixed axes (axes), a run's size
labels (sizes), one owner per run folder (owner), a workflow job's log (joblog), the Nsight
Compute passes (ncu_passes), a kernel's class and precision (kernel_class) and the paired
speedup's interval (ratios)."""
