"""What a kernel's source does: loads, stores and reduction calls per pointer parameter, counted from its facts
(harvest.kernel_facts)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from harvest.kernel_facts import REDUCTION_CALLS, kernel_facts

# ------------------------------------------------------------------------------------- kernel source


@dataclass(frozen=True)
class SourceCounts:
    """Memory and reduction calls in a kernel body, and which parameters they touch."""

    loads: int
    stores: int
    reductions: int
    reduction_calls: tuple[str, ...]  # distinct reduction calls, sorted ("tl.sum", "triton_helpers.max2")
    loaded_params: tuple[str, ...]  # pointer params read by tl.load, in signature order
    stored_params: tuple[str, ...]  # pointer params written by tl.store


def count_source(source: str) -> SourceCounts | None:
    """Count tl.load / tl.store / reduction calls in a Triton kernel module (None when it does not parse)."""
    try:
        facts = kernel_facts(source)
    except SyntaxError:
        return None
    parts = facts.everywhere
    # module.function calls only (tl.load, tl.sum), as counted since the first report
    calls = Counter(c.name for part in parts for c in part.calls if c.name.count(".") == 1)
    loaded = {n for part in parts for a in part.accesses if a.call == "tl.load" for n in a.names}
    stored = {n for part in parts for a in part.accesses if a.call == "tl.store" for n in a.names}
    reductions = {name: n for name, n in calls.items() if name in REDUCTION_CALLS}
    params = facts.functions[-1].params if facts.functions else ()
    return SourceCounts(
        loads=calls["tl.load"],
        stores=calls["tl.store"],
        reductions=sum(reductions.values()),
        reduction_calls=tuple(sorted(reductions)),
        loaded_params=tuple(p for p in params if p in loaded),
        stored_params=tuple(p for p in params if p in stored),
    )
