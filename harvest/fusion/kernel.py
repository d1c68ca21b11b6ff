"""One kernel's fusion: the ATen ops and FX nodes it holds, the user lines they come from, its memory traffic."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from harvest.fusion.common import NODE_MAPPINGS, STACK_TRACES, UNKNOWN, fields_json, name_ops
from harvest.fusion.counts import count_source
from harvest.fusion.provenance import SourceLine, handles_of, provenance_artifact, source_lines_for
from harvest.model import Graph, Kernel
from harvest.ops import aten_target, is_op_target, op_short_name

# ------------------------------------------------------------------------------------ kernel fusion


@dataclass(frozen=True)
class FusedNode:
    """One FX node a kernel computes (from its `# Graph fragment:`)."""

    name: str  # "pow_1"
    target: str  # "aten.pow.Tensor_Scalar"

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "target": self.target}


@dataclass(frozen=True)
class KernelFusion:
    """The fusion map of one Triton kernel."""

    kernel: str
    kind: str
    ops: tuple[str, ...]  # op targets the kernel computes, one entry per FX node (repeats kept), in order
    ops_from: str  # "graph fragment" | "Original ATen comment" | "kernel name" | "unknown"
    aten_ops: tuple[str, ...]  # the comment's "Original ATen: [...]" (decomposed originals: aten.native_layer_norm)
    fx_nodes: tuple[FusedNode, ...]
    source_nodes: tuple[str, ...]  # pre-grad nodes from "Topologically Sorted Source Nodes"
    post_grad_nodes: tuple[str, ...]  # from the provenance node mapping (all launches), sorted; () when absent
    source_lines: tuple[SourceLine, ...]  # () means unknown
    loads: int | None
    stores: int | None
    reductions: int | None
    reduction_calls: tuple[str, ...]
    launches: int
    debug_handles: tuple[str, ...]
    reads: tuple[str, ...]  # pointer params loaded
    writes: tuple[str, ...]  # pointer params stored

    @property
    def op_counts(self) -> Counter[str]:
        """Short op name -> count over this kernel's ops (one launch)."""
        return Counter(op_short_name(op) for op in self.ops)

    @property
    def source_text(self) -> str:
        """`examples/m.py:22, examples/m.py:23` or "unknown"."""
        return ", ".join(line.location for line in self.source_lines) or UNKNOWN

    def to_json(self) -> dict[str, Any]:
        return {
            **fields_json(self, "kernel", "kind", "ops", "ops_from"),
            "op_counts": dict(sorted(self.op_counts.items())),
            **fields_json(self, "aten_ops", "fx_nodes", "source_nodes", "post_grad_nodes"),
            "source_lines": [line.to_json() for line in self.source_lines] or UNKNOWN,
            **fields_json(self, "loads", "stores", "reductions", "reduction_calls", "launches", "debug_handles",
                          "reads", "writes"),
        }


def _kernel_ops(kernel: Kernel) -> tuple[tuple[str, ...], str, tuple[FusedNode, ...]]:
    comment = kernel.comment
    nodes = tuple(
        FusedNode(node.name, aten_target(node.target)) for node in comment.fragment if node.op == "call_function"
    )
    ops = tuple(n.target for n in nodes if is_op_target(n.target))
    if ops:
        return ops, "graph fragment", nodes
    if comment.aten_ops:
        return tuple(aten_target(op) for op in comment.aten_ops), "Original ATen comment", nodes
    named = tuple(f"aten.{op}" for op in name_ops(kernel.name))
    return named, ("kernel name" if named else UNKNOWN), nodes


def kernel_fusion(graph: Graph, kernel: Kernel, provenance: dict) -> KernelFusion:
    """The fusion map of one kernel of `graph`: ops, FX nodes, user lines, loads/stores/reductions."""
    ops, ops_from, nodes = _kernel_ops(kernel)
    mapping = provenance_artifact(provenance, NODE_MAPPINGS).get("cppCodeToPost") or {}
    traces = provenance_artifact(provenance, STACK_TRACES)
    handles = tuple(sorted(set(handles_of(mapping, kernel.name)) | set(handles_of(traces, kernel.name)), key=handle_key))
    post = sorted({str(n) for key in handles for n in mapping.get(key) or ()})
    counts = count_source(kernel.source)
    launches = len(graph.launches_of(kernel.name))
    return KernelFusion(
        kernel=kernel.name,
        kind=kernel.kind,
        ops=ops,
        ops_from=ops_from,
        aten_ops=tuple(aten_target(op) for op in kernel.comment.aten_ops),
        fx_nodes=nodes,
        source_nodes=kernel.comment.source_nodes,
        post_grad_nodes=tuple(post),
        source_lines=source_lines_for(kernel.name, provenance, handles),
        loads=counts.loads if counts else None,
        stores=counts.stores if counts else None,
        reductions=counts.reductions if counts else None,
        reduction_calls=counts.reduction_calls if counts else (),
        launches=launches,
        debug_handles=handles,
        reads=counts.loaded_params if counts else (),
        writes=counts.stored_params if counts else (),
    )


def handle_key(key: str) -> tuple[int, str]:
    handle = key.rpartition(":")[2]
    return (int(handle), key) if handle.isdigit() else (1 << 30, key)
