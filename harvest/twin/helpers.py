"""Which of twin.cu.j2's helpers (namespace hv) a twin's .cu holds: those its kernel names as `hv::NAME`, and the
helpers those name in turn. Nothing else is written (a pointwise twin has no warp reduce, a sum no NaN-aware max).

And which kernel parameters its code reads: one the kernel never reads is neither a CUDA parameter nor passed."""

from __future__ import annotations

import re

# A helper of templates/twin.cu.j2 -> the helpers its own code names (tests/test_twin.py reads the rendered template
# to keep this table true). Every helper the template has is a key.
HELPER_NEEDS: dict[str, frozenset[str]] = {
    name: frozenset(needs)
    for name, needs in {
        "cast": (), "bitcast": (), "aligned16": (), "load_vector": (), "store_vector": (),
        "maximumNan": (), "minimumNan": (), "maximum": (), "minimum": (),
        "Sum": (), "Prod": (), "Any": (),
        "MaxNan": ("maximumNan",), "MinNan": ("minimumNan",), "Max": ("maximum",), "Min": ("minimum",),
        "shuffle_xor": (), "shuffle_first": (), "block_reduce": ("shuffle_xor",), "column_reduce": (),
        "split_publish": ("block_reduce",), "grid_sync": (), "split_gather": (),
        "shuffle_up": ("shuffle_lane",), "shuffle_lane": (), "warp_scan": ("shuffle_up", "shuffle_lane"), "block_scan": ("shuffle_up",), "block_last": (), "split_carry": (),
        "warp_reduce": ("shuffle_xor", "shuffle_first"),
        "Welford": (), "welford_reduce": ("Welford",), "WelfordCombine": ("Welford",),
        "ValueIndex": (), "ArgMax": ("ValueIndex",), "ArgMin": ("ValueIndex",),
        "SoftmaxState": (), "online_softmax_combine": ("SoftmaxState", "maximumNan"),
        "SoftmaxCombine": ("SoftmaxState", "maximumNan"),
        "philox": (), "rand": ("philox",), "randn": ("philox",),
    }.items()
}  # fmt: skip

# Names inside a helper's block that the body uses as hv::NAME but that are not blocks of their own
_PART_OF = {"Philox": "philox", "uniform": "philox", "softmax_exp": "SoftmaxState"}

_COMMENT = re.compile(r"//[^\n]*")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")


def helpers_named(code: str) -> frozenset[str]:
    """The helpers `code` (a kernel's body and signature) names as hv::NAME, with everything they need."""
    wanted = {_PART_OF.get(name, name) for name in re.findall(r"\bhv::(\w+)", _COMMENT.sub("", code))}
    unknown = wanted - set(HELPER_NEEDS)
    assert not unknown, f"the twin names hv:: helpers twin.cu.j2 does not have: {sorted(unknown)}"
    todo, found = list(wanted), set()
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(HELPER_NEEDS[name])
    return frozenset(found)


def identifiers(code: str) -> set[str]:
    """The C++ identifiers of `code`, comments left out."""
    return set(_IDENTIFIER.findall(_COMMENT.sub("", code)))
