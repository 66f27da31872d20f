"""What every layer shares: the NVTX contract (ranges) and atomic file writes (io)."""
