"""What the fusion stages share: the provenance artifact names, "unknown", and the ops a kernel name spells.
(The reduction calls are a kernel fact: harvest.kernel_facts.REDUCTION_CALLS.)"""

from __future__ import annotations

import re

NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
UNKNOWN = "unknown"

# ----------------------------------------------------------------------------------------------- names


def name_ops(kernel_name: str) -> tuple[str, ...]:
    """Ops encoded in an Inductor kernel name (last resort): `triton_poi_fused_add_pow_0` -> (add, pow)."""
    match = re.match(r"triton_[a-z]+_fused_(.*?)(?:_\d+)?$", kernel_name)
    if not match or match.group(1).isdigit():  # `triton_poi_fused_1`: no op in the name (a layout copy), only its number
        return ()
    # Underscore-led ops (_softmax) leave an empty part before them; glue them back.
    ops: list[str] = []
    pending_underscore = False
    for part in match.group(1).split("_"):
        if part == "":
            pending_underscore = True
            continue
        ops.append(("_" if pending_underscore else "") + part)
        pending_underscore = False
    return tuple(ops)
