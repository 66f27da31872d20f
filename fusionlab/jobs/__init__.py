"""What one job's process needs around its experiment: a GPU slot and its lock (slots), the
host's speed probe (host_probe), the nsys and Nsight Compute wrappers that own a run folder
(nsys_profile, ncu_step), the record of a run that is not profiled (not_profiled) and the
device's measured peaks (peaks)."""
