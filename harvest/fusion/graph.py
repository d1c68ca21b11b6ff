"""A graph's fusion summary: ops before fusion, kernels after, what did not fuse and why (only when the data shows
it), extern calls, and the header comment of each generated module."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from harvest.fusion.common import NODE_MAPPINGS, STACK_TRACES, UNKNOWN, fields_json
from harvest.fusion.flow import FlowEdge, FlowNode, count_labels, data_flow
from harvest.fusion.kernel import KernelFusion, handle_key, kernel_fusion
from harvest.fusion.provenance import SourceLine, handles_of, provenance_artifact, source_lines_for
from harvest.model import Graph, Kernel
from harvest.ops import op_short_name
from harvest.text_output import plural

# ------------------------------------------------------------------------------------- graph fusion


@dataclass(frozen=True)
class Unfused:
    """An op that did not fuse with anything: alone in its kernel, or run as an extern call."""

    op: str  # short op name
    where: str  # kernel name or extern op
    how: str  # "extern call" | "alone in its kernel"
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"op": self.op, "where": self.where, "how": self.how, "reason": self.reason}


@dataclass(frozen=True)
class Boundary:
    """A buffer one Triton kernel writes and another reads: the two were not fused."""

    producer: str
    consumer: str
    buffers: tuple[str, ...]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return fields_json(self, "producer", "consumer", "buffers", "reason")


@dataclass(frozen=True)
class ExternFusion:
    """One extern call (mm, bmm, conv, aten fallback) and the user lines it came from."""

    op: str
    order: int
    out: str | None
    source_lines: tuple[SourceLine, ...]

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "short": op_short_name(self.op), **fields_json(self, "order", "out"),
                "source_lines": [line.to_json() for line in self.source_lines] or UNKNOWN}


@dataclass(frozen=True)
class GraphFusion:
    """Fusion summary of one graph: ATen ops before fusion, Triton kernels and extern calls after."""

    graph: str
    role: str
    ops_before: dict[str, int]  # short op name -> count: kernels' ops (per launch) + extern calls
    kernels: int  # Triton kernels Inductor defined in the graph
    launches: int  # their launches (one kernel can run more than once)
    externs: tuple[ExternFusion, ...]  # library calls (mm, convolution, aten fallbacks), in launch order
    kernel_fusions: tuple[KernelFusion, ...]  # one a kernel
    unfused: tuple[Unfused, ...]  # ops alone in their kernel, or run as an extern call
    boundaries: tuple[Boundary, ...]  # kernels that write a buffer the next one reads: not fused, and why
    nodes: tuple[FlowNode, ...]  # the data-flow chart: kernels, extern calls, graph inputs and outputs
    edges: tuple[FlowEdge, ...]  # and the buffers between them
    provenance: bool  # whether the capture had provenance artifacts

    @property
    def ops_total(self) -> int:
        return sum(self.ops_before.values())

    @property
    def fused_ops(self) -> dict[str, int]:
        """Short op name -> count over Triton kernels only (what the kernels hold)."""
        counts: Counter[str] = Counter()
        for kf in self.kernel_fusions:
            for op, n in kf.op_counts.items():
                counts[op] += n * max(kf.launches, 1)
        return dict(sorted(counts.items()))

    @property
    def summary(self) -> str:
        """One line: `1 kernel for 2 pow ops`, `4 kernels for 31 ops (6x mul, ...); 4 extern calls (2x addmm, ...)`."""
        fused = self.fused_ops
        n_ops = sum(fused.values())
        if len(fused) == 1:
            (op,) = fused
            what = f"{n_ops} {op} op{'s' if n_ops != 1 else ''}"
        else:
            what = f"{n_ops} ops ({', '.join(count_labels(Counter(fused)))})"
        text = f"{plural(self.kernels, 'kernel')} for {what}"
        if self.launches != self.kernels:
            text += f" in {plural(self.launches, 'launch', 'launches')}"
        if self.externs:
            ext = Counter(op_short_name(e.op) for e in self.externs)
            text += f"; {plural(len(self.externs), 'extern call')} ({', '.join(count_labels(ext))})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "ops_before": dict(self.ops_before),
            "ops_before_total": self.ops_total,
            "fused_ops": self.fused_ops,
            "triton_kernels": self.kernels,
            **fields_json(self, "launches", "externs", "unfused", "boundaries"),
            "flow": {"nodes": [n.to_json() for n in self.nodes], "edges": [e.to_json() for e in self.edges]},
            "provenance": self.provenance,
        }


def _short_lines(lines: tuple[SourceLine, ...]) -> tuple[str, ...]:
    """("small_model.py:22", ...): file base names for diagram boxes."""
    return tuple(f"{line.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line.line}" for line in lines)


def _boundary_reason(producer: Kernel, consumer: Kernel) -> str:
    reductions = ("reduction", "persistent_reduction", "cooperative_reduction")
    if producer.kind in reductions and consumer.kind in reductions:
        return f"reduction feeding a reduction ({_sizes(producer)} -> {_sizes(consumer)})"
    if producer.size_hints and consumer.size_hints and producer.size_hints != consumer.size_hints:
        return f"different iteration spaces ({_sizes(producer)} -> {_sizes(consumer)})"
    return UNKNOWN


def _sizes(kernel: Kernel) -> str:
    return ", ".join(f"{k}={v}" for k, v in kernel.size_hints.items()) or kernel.kind


def _unfused_reason(node_id: str, nodes: dict[str, FlowNode], edges: tuple[FlowEdge, ...]) -> str:
    """What the data flow shows around a lone op: where its inputs come from and where its output goes."""
    parts: list[str] = []
    for edge in edges:
        if edge.dst == node_id and nodes[edge.src].kind == "extern":
            parts.append(f"reads {', '.join(edge.buffers)} from extern call {nodes[edge.src].name}")
        if edge.src == node_id and nodes[edge.dst].kind == "extern":
            parts.append(f"feeds extern call {nodes[edge.dst].name}")
    touches_kernel = any(
        node_id in (e.src, e.dst) and nodes[e.src].kind == nodes[e.dst].kind == "kernel" for e in edges
    )
    if not parts and not touches_kernel:
        parts.append("no other Triton kernel touches its inputs or outputs")
    return "; ".join(parts) or UNKNOWN


def _extern_handles(graph: Graph, provenance: dict) -> dict[int, str]:
    """Extern call order -> its provenance key ("extern_kernels.mm:7").

    Debug handles number launches and extern calls in call order, so the k-th call of an op gets the k-th handle
    of that op.
    """
    traces = provenance_artifact(provenance, STACK_TRACES)
    mapping = provenance_artifact(provenance, NODE_MAPPINGS).get("cppCodeToPost") or {}
    found: dict[int, str] = {}
    for op in sorted({e.op for e in graph.externs}):
        keys = sorted(set(handles_of(traces, op)) | set(handles_of(mapping, op)), key=handle_key)
        calls = sorted((e for e in graph.externs if e.op == op), key=lambda e: e.order)
        if len(keys) == len(calls):
            found.update({call.order: key for call, key in zip(calls, keys)})
    return found


def graph_fusion(graph: Graph, provenance: dict) -> GraphFusion:
    """Fusion summary of `graph`: ops before fusion, kernels after, externs, unfused ops, data flow."""
    fusions = {k.name: kernel_fusion(graph, k, provenance) for k in graph.kernels}
    nodes, edges = data_flow(graph, fusions)

    ops_before: Counter[str] = Counter()
    for kf in fusions.values():
        for op, n in kf.op_counts.items():
            ops_before[op] += n * max(kf.launches, 1)
    externs: list[ExternFusion] = []
    handles = _extern_handles(graph, provenance)
    for extern in sorted(graph.externs, key=lambda e: e.order):
        ops_before[op_short_name(extern.op)] += 1
        handle = handles.get(extern.order)
        lines = source_lines_for(extern.op, provenance, (handle,)) if handle else ()
        externs.append(ExternFusion(extern.op, extern.order, extern.out, lines))
    lines_by_id = {f"e{i}": e.source_lines for i, e in enumerate(externs)}
    lines_by_id |= {n.id: fusions[n.name].source_lines for n in nodes if n.kind == "kernel"}
    nodes = tuple(replace(n, lines=_short_lines(lines_by_id.get(n.id, ()))) for n in nodes)
    by_id = {n.id: n for n in nodes}

    unfused: list[Unfused] = []
    kernel_ids = {n.name: n.id for n in nodes if n.kind == "kernel"}
    for kernel in graph.kernels:
        kf = fusions[kernel.name]
        if len(kf.ops) == 1:
            reason = _unfused_reason(kernel_ids[kernel.name], by_id, edges)
            unfused.append(Unfused(op_short_name(kf.ops[0]), kernel.name, "alone in its kernel", reason))
    for node in nodes:
        if node.kind == "extern":
            reason = "runs as a library call, not a Triton kernel"
            unfused.append(Unfused(op_short_name(node.name), node.name, "extern call", reason))

    boundaries: list[Boundary] = []
    for edge in edges:
        src, dst = by_id[edge.src], by_id[edge.dst]
        if src.kind == "kernel" and dst.kind == "kernel":
            reason = _boundary_reason(graph.kernel(src.name), graph.kernel(dst.name))
            boundaries.append(Boundary(src.name, dst.name, edge.buffers, reason))

    return GraphFusion(
        graph=graph.name,
        role=graph.role,
        ops_before=dict(sorted(ops_before.items())),
        kernels=len(graph.kernels),
        launches=len(graph.launches),
        externs=tuple(externs),
        kernel_fusions=tuple(fusions[k.name] for k in graph.kernels),
        unfused=tuple(unfused),
        boundaries=tuple(boundaries),
        nodes=nodes,
        edges=edges,
        provenance=bool(
            provenance_artifact(provenance, STACK_TRACES) or provenance_artifact(provenance, NODE_MAPPINGS).get("cppCodeToPost"),
        ),
    )


def header_comment(fusion: KernelFusion) -> str:
    """Comment lines for a standalone kernel module's header: what the kernel fused and where it came from."""
    lines = [f"# Fused ops: {', '.join(count_labels(fusion.op_counts)) or UNKNOWN} (from the {fusion.ops_from})"]
    if fusion.fx_nodes:
        lines.append("# FX nodes: " + ", ".join(f"{n.name} ({n.target})" for n in fusion.fx_nodes))
    if fusion.source_lines:
        lines.append("# Source lines:")
        lines += [f"#   {line.location} in {line.function}: {line.code}" for line in fusion.source_lines]
    else:
        lines.append(f"# Source lines: {UNKNOWN}")
    lines.append(f"# Loads: {fusion.loads}, stores: {fusion.stores}, reductions: {fusion.reductions}")
    return "\n".join(lines)
