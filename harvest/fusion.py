"""What fused into what: per-kernel fusion maps and a per-graph fusion summary, from the parsed model.

Pure: takes a parsed `Graph` (plus the provenance artifacts the capture collected for it) and returns frozen
dataclasses whose `to_json()` goes into manifest.json under "fusion". Everything here is read from data Inductor
wrote (graph fragments, kernel comments, launches, provenance artifacts); a reason is given only when that data
shows it, otherwise the field says "unknown".

    kf = kernel_fusion(graph, graph.kernels[0], provenance)   # ops, FX nodes, user lines, loads/stores/reductions
    gf = graph_fusion(graph, provenance)                       # ops before fusion, kernels after, externs, flow
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import libcst as cst
import libcst.matchers as m

from harvest.model import ExternCall, Graph, Kernel, Launch
from harvest.ops import aten_target, is_op_target, op_short_name
from harvest.syntax import dotted_cst, kernel_trees

NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
UNKNOWN = "unknown"

# Calls that reduce (or scan) along an axis. `triton_helpers.maximum` / `minimum` are elementwise and not listed.
REDUCTION_CALLS = frozenset(
    {
        "tl.sum",
        "tl.max",
        "tl.min",
        "tl.argmax",
        "tl.argmin",
        "tl.reduce",
        "tl.xor_sum",
        "tl.cumsum",
        "tl.cumprod",
        "tl.associative_scan",
        "triton_helpers.max2",
        "triton_helpers.min2",
        "triton_helpers.prod",
        "triton_helpers.any",
        "triton_helpers.welford",
        "triton_helpers.max_with_index",
        "triton_helpers.min_with_index",
        "triton_helpers.online_softmax_reduce",
    }
)

# ----------------------------------------------------------------------------------------------- names


def _name_ops(kernel_name: str) -> tuple[str, ...]:
    """Ops encoded in an Inductor kernel name (last resort): `triton_poi_fused_add_pow_0` -> (add, pow)."""
    match = re.match(r"triton_[a-z]+_fused_(.*?)(?:_\d+)?$", kernel_name)
    if not match:
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


# ------------------------------------------------------------------------------------------ provenance


@dataclass(frozen=True)
class SourceLine:
    """One user source line a kernel (or extern call) came from."""

    file: str
    line: int
    function: str
    code: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function, "code": self.code}


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\s*$')


def parse_stack_trace(trace: str) -> SourceLine | None:
    """The innermost frame of one stack-trace string (`  File "x.py", line 3, in f\\n    code\\n    ^^^`)."""
    lines = trace.splitlines()
    found: SourceLine | None = None
    for i, text in enumerate(lines):
        frame = _FRAME.match(text)
        if not frame:
            continue
        code = ""
        if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]):
            code = lines[i + 1].strip()
        found = SourceLine(frame["file"], int(frame["line"]), frame["function"], code)
    return found


def _artifact(provenance: dict[str, Any], name: str) -> dict[str, Any]:
    """One provenance artifact as a dict; older captures may hold it as JSON or Python-literal text."""
    value = provenance.get(name) if provenance else None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                return {}
    return value if isinstance(value, dict) else {}


def _handles(table: dict[str, Any], name: str) -> list[str]:
    """Keys of a provenance table that belong to kernel/extern `name` ("name:<debug handle>"), sorted by handle."""
    keys = [k for k in table if isinstance(k, str) and k.rpartition(":")[0] == name]
    return sorted(keys, key=lambda k: (len(k), k))


def source_lines_for(name: str, provenance: dict[str, Any], handles: tuple[str, ...] = ()) -> tuple[SourceLine, ...]:
    """User source lines of a kernel or extern call. With `handles` only those debug handles are read."""
    traces = _artifact(provenance, STACK_TRACES)
    keys = list(handles) if handles else _handles(traces, name)
    found: dict[tuple[str, int], SourceLine] = {}
    for key in keys:
        for trace in traces.get(key) or ():
            line = parse_stack_trace(str(trace))
            if line is not None:
                found.setdefault((line.file, line.line), line)
    return tuple(found[k] for k in sorted(found))


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


def _pointer_names(expr: cst.BaseExpression) -> set[str]:
    """The pointer a tl.load/tl.store addresses: `in_ptr0 + (x0 + ks0*x1)` -> {in_ptr0} (the leftmost term)."""
    base = expr
    while isinstance(base, cst.BinaryOperation):
        base = base.left
    if isinstance(base, cst.Name):
        return {base.value}
    return {n.value for n in m.findall(expr, m.Name())}  # type: ignore[union-attr]  # block pointers and the like


class _CallCounter(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.loaded: set[str] = set()
        self.stored: set[str] = set()
        self.params: list[str] = []
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._depth == 0:
            self.params = [p.name.value for p in node.params.params]
        self._depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_cst(node.func)
        if name.count(".") != 1:  # module.function calls only (tl.load, tl.sum), as counted since the first report
            return
        self.calls[name] += 1
        if name in ("tl.load", "tl.store") and node.args:
            (self.loaded if name == "tl.load" else self.stored).update(_pointer_names(node.args[0].value))


def count_source(source: str) -> SourceCounts | None:
    """Count tl.load / tl.store / reduction calls in a Triton kernel module (None when it does not parse)."""
    module = kernel_trees(source).cst
    if module is None:
        return None
    counter = _CallCounter()
    module.visit(counter)
    reductions = {name: n for name, n in counter.calls.items() if name in REDUCTION_CALLS}
    params = counter.params
    return SourceCounts(
        loads=counter.calls["tl.load"],
        stores=counter.calls["tl.store"],
        reductions=sum(reductions.values()),
        reduction_calls=tuple(sorted(reductions)),
        loaded_params=tuple(p for p in params if p in counter.loaded),
        stored_params=tuple(p for p in params if p in counter.stored),
    )


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
            "kernel": self.kernel,
            "kind": self.kind,
            "ops": list(self.ops),
            "ops_from": self.ops_from,
            "op_counts": dict(sorted(self.op_counts.items())),
            "aten_ops": list(self.aten_ops),
            "fx_nodes": [n.to_json() for n in self.fx_nodes],
            "source_nodes": list(self.source_nodes),
            "post_grad_nodes": list(self.post_grad_nodes),
            "source_lines": [line.to_json() for line in self.source_lines] or UNKNOWN,
            "loads": self.loads,
            "stores": self.stores,
            "reductions": self.reductions,
            "reduction_calls": list(self.reduction_calls),
            "launches": self.launches,
            "debug_handles": list(self.debug_handles),
            "reads": list(self.reads),
            "writes": list(self.writes),
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
    named = tuple(f"aten.{op}" for op in _name_ops(kernel.name))
    return named, ("kernel name" if named else UNKNOWN), nodes


def kernel_fusion(graph: Graph, kernel: Kernel, provenance: dict) -> KernelFusion:
    """The fusion map of one kernel of `graph`: ops, FX nodes, user lines, loads/stores/reductions."""
    ops, ops_from, nodes = _kernel_ops(kernel)
    mapping = _artifact(provenance, NODE_MAPPINGS).get("cppCodeToPost") or {}
    traces = _artifact(provenance, STACK_TRACES)
    handles = tuple(sorted(set(_handles(mapping, kernel.name)) | set(_handles(traces, kernel.name)), key=_handle_key))
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


def _handle_key(key: str) -> tuple[int, str]:
    handle = key.rpartition(":")[2]
    return (int(handle), key) if handle.isdigit() else (1 << 30, key)


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
        names = [arg.buffer] if arg.buffer else _tensor_names(graph, [arg.expr])
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
        ops = _count_labels(fusion.op_counts if fusion else Counter())
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


def _count_labels(counts: Counter[str]) -> tuple[str, ...]:
    """Counter -> ("2x pow", "add"), most frequent first, then by name (stable)."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(f"{n}x {op}" if n > 1 else op for op, n in items)


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
        return {
            "producer": self.producer,
            "consumer": self.consumer,
            "buffers": list(self.buffers),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ExternFusion:
    """One extern call (mm, bmm, conv, aten fallback) and the user lines it came from."""

    op: str
    order: int
    out: str | None
    source_lines: tuple[SourceLine, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "short": op_short_name(self.op),
            "order": self.order,
            "out": self.out,
            "source_lines": [line.to_json() for line in self.source_lines] or UNKNOWN,
        }


@dataclass(frozen=True)
class GraphFusion:
    """Fusion summary of one graph: ATen ops before fusion, Triton kernels and extern calls after."""

    graph: str
    role: str
    ops_before: dict[str, int]  # short op name -> count: kernels' ops (per launch) + extern calls
    kernels: int
    launches: int
    externs: tuple[ExternFusion, ...]
    kernel_fusions: tuple[KernelFusion, ...]
    unfused: tuple[Unfused, ...]
    boundaries: tuple[Boundary, ...]
    nodes: tuple[FlowNode, ...]
    edges: tuple[FlowEdge, ...]
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
            what = f"{n_ops} ops ({', '.join(_count_labels(Counter(fused)))})"
        text = f"{_plural(self.kernels, 'kernel')} for {what}"
        if self.launches != self.kernels:
            text += f" in {_plural(self.launches, 'launch', 'launches')}"
        if self.externs:
            ext = Counter(op_short_name(e.op) for e in self.externs)
            text += f"; {_plural(len(self.externs), 'extern call')} ({', '.join(_count_labels(ext))})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "ops_before": dict(self.ops_before),
            "ops_before_total": self.ops_total,
            "fused_ops": self.fused_ops,
            "triton_kernels": self.kernels,
            "launches": self.launches,
            "externs": [e.to_json() for e in self.externs],
            "unfused": [u.to_json() for u in self.unfused],
            "boundaries": [b.to_json() for b in self.boundaries],
            "flow": {"nodes": [n.to_json() for n in self.nodes], "edges": [e.to_json() for e in self.edges]},
            "provenance": self.provenance,
        }


def _short_lines(lines: tuple[SourceLine, ...]) -> tuple[str, ...]:
    """("small_model.py:22", ...): file base names for diagram boxes."""
    return tuple(f"{line.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line.line}" for line in lines)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _boundary_reason(producer: Kernel, consumer: Kernel) -> str:
    reductions = ("reduction", "persistent_reduction")
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
    traces = _artifact(provenance, STACK_TRACES)
    mapping = _artifact(provenance, NODE_MAPPINGS).get("cppCodeToPost") or {}
    found: dict[int, str] = {}
    for op in sorted({e.op for e in graph.externs}):
        keys = sorted(set(_handles(traces, op)) | set(_handles(mapping, op)), key=_handle_key)
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
            _artifact(provenance, STACK_TRACES) or _artifact(provenance, NODE_MAPPINGS).get("cppCodeToPost"),
        ),
    )


def header_comment(fusion: KernelFusion) -> str:
    """Comment lines for a standalone kernel module's header: what the kernel fused and where it came from."""
    lines = [f"# Fused ops: {', '.join(_count_labels(fusion.op_counts)) or UNKNOWN} (from the {fusion.ops_from})"]
    if fusion.fx_nodes:
        lines.append("# FX nodes: " + ", ".join(f"{n.name} ({n.target})" for n in fusion.fx_nodes))
    if fusion.source_lines:
        lines.append("# Source lines:")
        lines += [f"#   {line.location} in {line.function}: {line.code}" for line in fusion.source_lines]
    else:
        lines.append(f"# Source lines: {UNKNOWN}")
    lines.append(f"# Loads: {fusion.loads}, stores: {fusion.stores}, reductions: {fusion.reductions}")
    return "\n".join(lines)
