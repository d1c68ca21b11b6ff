"""The data flow of a graph: kernels and extern calls as nodes, the buffers between them as edges."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import libcst as cst
import libcst.matchers as m

from harvest.fusion.kernel import KernelFusion
from harvest.model import ExternCall, Graph, Launch
from harvest.ops import op_short_name

# --------------------------------------------------------------------------------------- data flow


@dataclass(frozen=True)
class FlowNode:
    """A box of the fusion diagram: a Triton kernel, an extern call, a graph input or a graph output."""

    id: str  # safe for mermaid: k0 (kernels in definition order), e1 (externs in call order), in, out
    kind: str  # "kernel" | "extern" | "input" | "output"
    name: str  # kernel name, extern op ("extern_kernels.addmm"), "graph inputs" / "graph outputs"
    ops: tuple[str, ...] = ()  # short op names with counts ("2x pow") for kernels; the op for externs
    lines: tuple[str, ...] = ()  # user lines, short: "small_model.py:22"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "name": self.name, "ops": list(self.ops), "lines": list(self.lines)}


@dataclass(frozen=True)
class FlowEdge:
    src: str
    dst: str
    buffers: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "buffers": list(self.buffers)}


def _names_in(expr: str) -> list[str]:
    """Identifiers in a call-site expression: `reinterpret_tensor(buf4, (32, 32), (32, 1), 0)` -> [..., buf4]."""
    try:
        node = cst.parse_expression(expr)
    except cst.ParserSyntaxError:
        return []
    return [n.value for n in m.findall(node, m.Name())]  # type: ignore[union-attr]


def _root(graph: Graph, name: str) -> str:
    """The storage a buffer name refers to: follows views and reuse aliases to their base."""
    seen = set()
    while name in graph.buffers and graph.buffers[name].base and name not in seen:
        seen.add(name)
        name = graph.buffers[name].base  # type: ignore[assignment]
    return name


def _tensor_names(graph: Graph, exprs: list[str]) -> list[str]:
    known = set(graph.buffers) | set(graph.inputs)
    out: list[str] = []
    for expr in exprs:
        for name in _names_in(expr):
            if name in known and name not in out:
                out.append(name)
    return out


def _launch_io(graph: Graph, launch: Launch, fusion: KernelFusion | None) -> tuple[list[str], list[str]]:
    """Buffers a launch reads and writes (by kernel parameter: tl.load/tl.store targets, else the ptr naming)."""
    reads: list[str] = []
    writes: list[str] = []
    for arg in launch.args:
        names = [arg.buffer] if arg.buffer else _tensor_names(graph, [arg.item_of] if arg.item_of else [])
        if not names:
            continue
        if fusion is not None and (fusion.reads or fusion.writes):
            is_read, is_write = arg.param in fusion.reads, arg.param in fusion.writes
        else:
            is_read = arg.param.startswith(("in_ptr", "in_out_ptr")) or not arg.param.startswith("out_ptr")
            is_write = arg.param.startswith(("out_ptr", "in_out_ptr"))
        if is_read:
            reads.extend(names)
        if is_write:
            writes.extend(names)
    return reads, writes


def data_flow(graph: Graph, fusions: dict[str, KernelFusion]) -> tuple[tuple[FlowNode, ...], tuple[FlowEdge, ...]]:
    """Boxes and edges of the fusion diagram: producer -> consumer of each buffer, in launch order.

    Walks launches and extern calls in order, tracking the last writer of each storage, so reused buffers
    (`buf14 = buf12; del buf12  # reuse`) connect to their latest contents only. Graph inputs are one node ("in"),
    graph outputs another ("out"); edges carry the buffer names.
    """
    kernel_ids = {k.name: f"k{i}" for i, k in enumerate(graph.kernels)}
    nodes: dict[str, FlowNode] = {}
    for kernel in graph.kernels:
        fusion = fusions.get(kernel.name)
        ops = count_labels(fusion.op_counts if fusion else Counter())
        nodes[kernel_ids[kernel.name]] = FlowNode(kernel_ids[kernel.name], "kernel", kernel.name, ops)
    steps: list[tuple[int, int, Launch | ExternCall]] = [(launch.order, 0, launch) for launch in graph.launches]
    steps += [(extern.order, 1, extern) for extern in graph.externs]
    steps.sort(key=lambda s: (s[0], s[1]))

    last_writer: dict[str, str] = {_root(graph, name): "in" for name in graph.inputs}
    edges: dict[tuple[str, str], list[str]] = {}

    def connect(src: str, dst: str, buffer: str) -> None:
        if src == dst:
            return
        buffers = edges.setdefault((src, dst), [])
        if buffer not in buffers:
            buffers.append(buffer)

    extern_index = 0
    for _, _, step in steps:
        if isinstance(step, Launch):
            node_id = kernel_ids.get(step.kernel)
            if node_id is None:
                continue
            reads, writes = _launch_io(graph, step, fusions.get(step.kernel))
        else:
            node_id = f"e{extern_index}"
            extern_index += 1
            nodes[node_id] = FlowNode(node_id, "extern", step.op, (op_short_name(step.op),))
            reads = _tensor_names(graph, list(step.args))
            writes = [step.out] if step.out else []
        for name in reads:
            writer = last_writer.get(_root(graph, name))
            if writer is not None:
                connect(writer, node_id, name)
        for name in writes:
            last_writer[_root(graph, name)] = node_id

    for name in _tensor_names(graph, list(graph.outputs)):
        writer = last_writer.get(_root(graph, name))
        if writer is not None and writer != "in":  # an input handed back unchanged (saved for backward) is skipped
            connect(writer, "out", name)

    if any(src == "in" for src, _ in edges):
        nodes["in"] = FlowNode("in", "input", "graph inputs")
    if any(dst == "out" for _, dst in edges):
        nodes["out"] = FlowNode("out", "output", "graph outputs")
    flow_edges = tuple(FlowEdge(src, dst, tuple(bufs)) for (src, dst), bufs in edges.items())
    return tuple(nodes[k] for k in sorted(nodes, key=_node_sort_key)), flow_edges


def _node_sort_key(node_id: str) -> tuple[int, int]:
    prefix = node_id.rstrip("0123456789")
    return ({"in": 0, "k": 1, "e": 2, "out": 3}[prefix], int(node_id[len(prefix) :] or 0))


def count_labels(counts: Counter[str]) -> tuple[str, ...]:
    """Counter -> ("2x pow", "add"), most frequent first, then by name (stable)."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(f"{n}x {op}" if n > 1 else op for op, n in items)
