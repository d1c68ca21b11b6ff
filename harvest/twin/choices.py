"""The translators' choices that timings decide, as data: `translate(facts, choices)` takes them, today's values are
the defaults, and scripts/twin_variants.py writes the twins again with some of them changed to time both in one
device call (docs/twins-h200.md)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from harvest.errors import UsageError


@dataclass(frozen=True)
class TwinChoices:
    """How a reduction's twin maps its rows onto CUDA threads, where more than one way is right and the H200 decides.

    The first group was weighed on the H200 (docs/benchmarks.md, docs/twins-h200.md). The last five were written in
    sessions 20 and 21 and are off (0) until a device call weighs them."""

    warp_row_limit: int = 1024  # a persistent reduction's rows up to this long: one warp per row (32 values a lane at most)
    kept_registers: int = 64  # registers a lane may spend keeping row values between passes
    prefetch_registers: int = 48  # ... of them, with loads a later pass needs loaded early (fewer: more warps resident)
    loop_copies: int = 4  # a looped reduction's accumulators, per thread: independent chains of loads and combine steps
    max_chunks: int = 4  # a looped reduction reading its rows contiguously with one load: vectors a thread loads a step
    grouped_lane_values: int = 8  # a warp-per-row lane takes its values in 16-byte groups when a group holds this many or more
    split_shared_bytes: int = 32 * 1024  # a mix-order reduction's column sums, one row of them per warp, at most this much shared memory
    # A mix-order reduction's block per row with this many threads (Triton's own program has 128; 0: hv::row_threads),
    # and warps per row for rows without 16-byte groups.
    split_block_threads: int = 0
    split_warps_ungrouped: bool = False
    # Every looped row reduction split over blocks as a cooperative reduction's twin is (the launcher splits only rows
    # too few to fill the GPU: a one-row mean over 8 SMs' worth of blocks instead of one).
    split_looped_rows: bool = False
    # A looped row reduction over a row of a constant length: the block's size a constant of the kernel, as it is
    # Triton's, so that its column loops have a known trip count the compiler may unroll (loads issued up front).
    constant_row_block: bool = False

    def changed(self, text: str) -> TwinChoices:
        """These choices with `NAME=INT[,NAME=INT...]` applied (`split_looped_rows=1,loop_copies=2`); UsageError for
        a name that is not a choice or a value that is not an integer, saying which choices there are."""
        known = {f.name: f.type for f in fields(self)}
        changes: dict[str, int | bool] = {}
        for change in filter(None, text.split(",")):
            name, _, value = change.partition("=")
            if name not in known:
                raise UsageError(f"{name!r} is not a twin choice; the choices are {', '.join(known)}")
            try:
                number = int(value)
            except ValueError:
                raise UsageError(f"{change!r}: a twin choice's value is an integer (0 or 1 for a yes-or-no choice)") from None
            if number < 0 or (known[name] == "bool" and number > 1):
                raise UsageError(f"{change!r}: {name} is {'0 or 1' if known[name] == 'bool' else 'an integer, 0 or more'}")
            changes[name] = bool(number) if known[name] == "bool" else number
        return replace(self, **changes)


DEFAULT_CHOICES = TwinChoices()
