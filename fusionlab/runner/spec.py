"""ExperimentSpec: one experiment as the command line names it, built once (cli.parse_args)
and read by every step of the run; never changed after it is built."""
from __future__ import annotations

from dataclasses import dataclass

from fusionlab.core import sizes as size_labels


@dataclass(frozen=True)
class ExperimentSpec:
    """The runner's arguments, one field per flag (cli.build_parser has each flag's help).
    `size` is the canonical label: a value equal to the model's default is not part of it."""
    model: str
    variant: str
    batch: int
    out: str
    size: str = "default"
    mode: str = "inference"
    dtype: str = "float32"
    warmup: int = 50
    warmup_min_s: float = 0.1
    iters: int = 200
    repeat: int = 0
    seed: int = 0
    windows: int = 5
    paired_eager: bool = False
    paired_ci: float = 0.02
    timing_max_s: float = 10.0
    pin_cpus: str = "none"
    slots: str | None = None
    capture_range: bool = False
    device: str = "auto"
    profiler: str = "none"
    compile_mode: str = "default"
    optimizer: str = "none"
    compile_debug: str | None = None
    timeout: float = 0.0
    trace: str | None = None

    @property
    def label(self) -> str:
        """model/variant/bsBATCH and the size's suffix, as the log lines name a run."""
        return f"{self.model}/{self.variant}/bs{self.batch}{size_labels.suffix(self.size)}"

    def variant_options(self, **extra) -> dict:
        """The options a variant's prepare and apply read (registry.VariantSpec)."""
        return {"compile_mode": self.compile_mode, "dtype": self.dtype, **extra}
