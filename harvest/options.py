"""`ExtractOptions`: how `harvest extract` captures and renders, checked once, frozen."""

from __future__ import annotations

from dataclasses import dataclass

from harvest.errors import UsageError


@dataclass(frozen=True)
class ExtractOptions:
    """What an extraction may vary; the defaults are `harvest extract`'s. Bad values raise a UsageError on creation.

    args: the script's own arguments. timeout: seconds the target may run (None: no limit). force: replace another
    target's extraction in the output directory. names: "readable" (renamed by libcst) or "inductor" (as Inductor
    wrote them). target_sm: the sm the CPU path compiles PTX for. device: "auto", "cuda" or "cpu". record: "data"
    keeps each kernel's first launch's data (capped per kernel and in total, in MiB), "layouts" only layouts and
    values. run_artifact: call an artifact's graphs under the launch recorder. launcher: torchrun's arguments
    ("--standalone", "--nproc-per-node=2"): the script runs as a torchrun job, captured on every rank.
    """

    args: tuple[str, ...] = ()
    timeout: float | None = None
    force: bool = False
    names: str = "readable"
    target_sm: int = 90
    device: str = "auto"
    record: str = "data"
    record_cap_mib: float = 1024
    record_total_cap_mib: float = 4096
    run_artifact: bool = False
    launcher: tuple[str, ...] = ()  # torchrun's own arguments: run the script as a torchrun job, captured on every rank

    def __post_init__(self) -> None:
        if self.record not in ("data", "layouts"):
            raise UsageError(f"--record must be 'data' or 'layouts', not {self.record!r}")
        if self.record_cap_mib <= 0 or self.record_total_cap_mib <= 0:
            raise UsageError("--record-cap and --record-total-cap must be positive numbers of MiB")
        if self.names not in ("readable", "inductor"):
            raise UsageError(f"--names must be 'readable' or 'inductor', not {self.names!r}")
        if self.timeout is not None and self.timeout <= 0:
            raise UsageError(f"--timeout must be a positive number of seconds, not {self.timeout:g}")
