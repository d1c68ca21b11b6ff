"""What the fusion stages share: the provenance artifact names, "unknown", the ops a kernel name spells, and the
JSON of a dataclass's fields.
(The reduction calls are a kernel fact: harvest.kernel_facts.REDUCTION_CALLS.)"""

from __future__ import annotations

import re
from typing import Any

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


# ------------------------------------------------------------------------------------------------ JSON


def fields_json(item: object, *fields: str) -> dict[str, Any]:
    """`{field: value}` for fields of a dataclass, in the order given, as JSON holds them: a tuple as a list (of its
    items' to_json() where they have one), a mapping as a dict, anything else as it is."""
    return {field: _json_value(getattr(item, field)) for field in fields}


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return [v.to_json() if hasattr(v, "to_json") else v for v in value]
    if isinstance(value, dict):
        return dict(value)
    return value
