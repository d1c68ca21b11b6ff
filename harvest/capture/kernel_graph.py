"""Child side: the graph each Triton kernel computes, recorded while Inductor generates it (for the eager reference).

Two read-only hooks (see ../shared/DESIGN.md, "The kernel's graph, recorded at capture time"):

* `GraphLowering.run_node` keeps the IR value Inductor lowered each FX node to (the interpreter drops them before
  code generation), so a buffer can be traced back to the FX node it holds;
* `TritonScheduling.define_kernel` (reached for pointwise, reductions, split reductions, templates and foreach
  kernels), after it returns the kernel's name, reads the FX nodes the kernel was fused from and, for each kernel
  argument, the buffer passed and the FX node that buffer holds.

What is recorded is plain data (strings, numbers, lists: one JSON event per kernel), never code or pickles. An FX
node's arguments are written as text in the syntax of Inductor's own `# Graph fragment:` comment, so the parent reads
them with the fragment's parser. Nothing here changes what Inductor generates: every hook calls the original first
and only reads what it returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable


def format_value(value: object) -> str:
    """An FX argument as fragment text: `%node`, literals, `[...]`, `(...)`, `{k: v}`; a symbolic size as its
    expression (`s0`), a dtype as `torch.float32`, a device as `cuda:0`."""
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        val = value.meta.get("val")
        if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return str(val.node.expr)
        return "%" + value.name
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if math.isnan(value):
            return "nan"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return str(value.node.expr)
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
        return str(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    text = str(value)  # a sympy expression (a size), an enum: as Inductor prints it
    return text


def tensor_meta(node) -> dict | None:
    """Shape, stride, dtype and device of a node's tensor value (sizes as ints, or their expression's text)."""
    import torch

    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return None

    def size(s) -> int | str:
        return int(s) if isinstance(s, int) else str(s.node.expr if hasattr(s, "node") else s)

    try:
        stride = [size(s) for s in val.stride()]
    except RuntimeError:  # a sparse or nested value has no strides
        stride = []
    return {"shape": [size(s) for s in val.shape], "stride": stride, "dtype": str(val.dtype).removeprefix("torch."),
            "device": val.device.type}


def node_record(node, index: int) -> dict:
    target = node.target
    if callable(target) and getattr(target, "__module__", "") == "_operator":
        target_text = f"operator.{target.__name__}"
    else:
        target_text = str(target)
    return {
        "name": node.name,
        "index": index,  # position in the graph: the reference computes nodes in this order
        "op": node.op,
        "target": target_text,
        "args": ", ".join(format_value(a) for a in node.args),
        "kwargs": ", ".join(f"{k}: {format_value(v)}" for k, v in node.kwargs.items()),
        "meta": tensor_meta(node),
    }


class KernelGraphs:
    """The two hooks and what they keep; `write(event)` sends one JSON event per newly defined kernel."""

    def __init__(self, write: Callable[[dict], None], graph_index: Callable[[], int]):
        self.write = write
        self.graph_index = graph_index
        self.values: dict[str, object] = {}  # FX node name -> the IR value it was lowered to (this graph)
        self.lowering = None  # the GraphLowering `values` belongs to
        self.seen: set[str] = set()  # kernel names already recorded for this graph
        self.buffer_nodes: dict[str, dict] | None = None

    def install(self) -> bool:
        """Install both hooks; False (nothing installed: the reference falls back to the kernels' comments) when this
        torch lacks either place."""
        try:
            from torch._inductor.codegen.triton import TritonScheduling
            from torch._inductor.graph import GraphLowering
        except ImportError:
            return False
        if not hasattr(GraphLowering, "run_node") or not hasattr(TritonScheduling, "define_kernel"):
            return False
        hooks = self
        original_run_node = GraphLowering.run_node

        def run_node(lowering, n):
            result = original_run_node(lowering, n)
            if hooks.lowering is not lowering:
                hooks.lowering, hooks.values, hooks.seen, hooks.buffer_nodes = lowering, {}, set(), None
            hooks.values[n.name] = result
            return result

        GraphLowering.run_node = run_node  # type: ignore[method-assign]
        original_define = TritonScheduling.define_kernel

        def define_kernel(scheduling, src_code, node_schedule, kernel):
            name = original_define(scheduling, src_code, node_schedule, kernel)
            try:
                hooks.record(name, node_schedule, kernel)
            except Exception as exc:  # noqa: BLE001 - recording must never break the user's compile
                hooks.write({"event": "kernel_graph", "graph": hooks.graph_index(), "kernel": name,
                             "error": f"{type(exc).__name__}: {exc}"})
            return name

        TritonScheduling.define_kernel = define_kernel  # type: ignore[method-assign]
        return True

    # -- reading Inductor's objects ------------------------------------------------------------------------------

    def buffers(self) -> dict[str, dict]:
        """Buffer name -> {"node": the FX node whose value the buffer is, "views": nodes that view it}."""
        if self.buffer_nodes is not None:
            return self.buffer_nodes
        from torch._inductor import ir
        from torch._inductor.virtualized import V

        found: dict[str, dict] = {}
        for node_name, value in self.values.items():
            for buffer, viewed in _buffers_of(value, ir):
                entry = found.setdefault(buffer, {"node": None, "views": []})
                if not viewed and entry["node"] is None:
                    entry["node"] = node_name
                elif node_name not in entry["views"] and node_name != entry["node"]:
                    entry["views"].append(node_name)
        # The inputs of a cat Inductor writes straight into their slices of its buffer: which input each is.
        for node_name, value in self.values.items():
            concat = value
            while isinstance(concat, ir.MutableBox):  # the cat node itself, not a view of it
                concat = concat.data
            if isinstance(concat, getattr(ir, "ConcatKernel", ())):
                for position, part in enumerate(getattr(concat, "inputs", []) or []):
                    for buffer, _ in _buffers_of(part, ir):
                        found.setdefault(buffer, {"node": None, "views": []})["cat"] = [node_name, position]
        # A graph input is its placeholder's value, even where Inductor copied it into a buffer of another layout.
        for name in getattr(V.graph, "graph_input_names", []) or []:
            if name in self.values:
                found.setdefault(str(name), {"node": None, "views": []})["node"] = str(name)
        # Buffers no FX node's value is (split-reduction partials, a mutation's result): the nodes they come from.
        for name, buffer in getattr(V.graph, "name_to_buffer", {}).items():
            entry = found.setdefault(str(name), {"node": None, "views": []})
            if entry["node"] is None:
                origins = getattr(buffer, "origins", None) or ()
                entry["origins"] = sorted(o.name for o in origins if hasattr(o, "name"))
        self.buffer_nodes = found
        return found

    def record(self, name: str, node_schedule, kernel) -> None:
        from torch._inductor.virtualized import V

        if name in self.seen:
            return
        self.seen.add(name)
        graph = V.graph.graph
        position = {node: i for i, node in enumerate(graph.nodes)}
        origins: set = set()
        for item in node_schedule:
            if not hasattr(item, "get_nodes"):
                continue  # the markers between loops (EnableReduction, DisableReduction)
            for leaf in item.get_nodes():
                ir_node = getattr(leaf, "node", None)
                if ir_node is not None and hasattr(ir_node, "get_origins"):
                    origins |= set(ir_node.get_origins())
        nodes = sorted((n for n in origins if n in position), key=position.__getitem__)
        computes = []  # the IR buffers the kernel's scheduler nodes compute
        for item in node_schedule:
            for leaf in item.get_nodes() if hasattr(item, "get_nodes") else ():
                for buffer_name in leaf.get_buffer_names() if hasattr(leaf, "get_buffer_names") else ():
                    computes.append(str(buffer_name))
        arg_defs, call_args, precompile_args, _ = kernel.args.python_argdefs()
        inplace = {}
        for inplaced in kernel.args.inplace_buffers.values():
            names = getattr(inplaced, "other_names", None)
            if names:
                inplace[inplaced.inner_name] = list(names)
        mutation = dict(getattr(V.graph.scheduler, "mutation_real_name", {}) or {})
        buffers = self.buffers()
        args = []
        for arg_def, call_arg, pre in zip(arg_defs, call_args, precompile_args):
            param = getattr(arg_def, "name", str(arg_def))
            entry: dict = {"param": param, "buffer": str(call_arg), "kind": type(pre).__name__}
            if param in inplace:
                entry["buffers"] = inplace[param]
            args.append(entry)
        mentioned = {str(c) for c in call_args} | {b for names in inplace.values() for b in names}
        mentioned |= {m for m, real in mutation.items() if real in mentioned}
        graph_inputs = set(getattr(V.graph, "graph_input_names", []) or [])
        # What the kernel's nodes read, and, back through nodes that are not a buffer the kernel is passed (views,
        # getitems of a tuple the kernel computes, an index Inductor recomputes: T5's relative position buckets,
        # nine nodes deep), what those read: enough for the reference to recompute them. The walk stops at a buffer
        # the kernel is passed, and at a reduction or a library call's result, which no kernel recomputes (past them
        # lies the rest of the graph: a whole backward).
        from torch._inductor import ir

        stops = {buffers[b]["node"] for b in mentioned if b in buffers and buffers[b]["node"]}
        stops |= {n for n, value in self.values.items() if not _recomputable(value, ir)}
        kernel_nodes = set(nodes)
        read: set = set()
        frontier = [a for n in nodes for a in n.all_input_nodes]
        for _ in range(32):
            step = []
            for a in frontier:
                if a in kernel_nodes or a in read or a not in position:
                    continue
                read.add(a)
                if a.op == "call_function" and a.name not in stops:
                    step.extend(a.all_input_nodes)
            frontier = step
        # The elements of a tuple the kernel computes (var_mean's getitems: what a partial buffer is part of).
        for n in nodes:
            for user in n.users:
                if user not in kernel_nodes and getattr(user.target, "__name__", "") == "getitem":
                    read.add(user)
        # And the nodes that view a buffer the kernel is passed (`getitem_5`, the mean a Welford buffer holds).
        by_name = {n.name: n for n in position}
        for b in mentioned:
            for view in (buffers.get(b) or {}).get("views", []):
                if by_name.get(view) is not None and by_name[view] not in kernel_nodes:
                    read.add(by_name[view])
        read = sorted(read, key=position.__getitem__)
        self.write({
            "event": "kernel_graph",
            "graph": self.graph_index(),
            "kernel": name,
            "nodes": [node_record(n, position[n]) for n in nodes],
            "inputs": [node_record(n, position[n]) for n in read],  # the nodes around it, see above
            "computes": computes,
            "args": args,
            "buffers": {b: {**buffers.get(b, {"node": None, "views": []}),
                            **({"mutates": mutation[b]} if b in mutation else {}),
                            **({"graph_input": True} if b in graph_inputs else {})}
                        for b in sorted(mentioned)},
        })


def _recomputable(value, ir) -> bool:
    """Whether a kernel may compute an IR value again where it reads it, as Inductor inlines pointwise work: not a
    reduction's result, nor a library call's (an extern kernel's output or an element of the tuple it returns)."""
    for _ in range(32):
        if isinstance(value, (ir.MutableBox, ir.BaseView)):
            value = value.data
        else:
            break
    if isinstance(value, (ir.ExternKernel, ir.MultiOutput)):
        return False
    return not (isinstance(value, ir.ComputedBuffer) and isinstance(value.data, ir.Reduction))


def _buffers_of(value, ir) -> list[tuple[str, bool]]:
    """The buffers an IR value is, or views: [(name, viewed)] (a tuple result gives one per element)."""
    if isinstance(value, (list, tuple)):  # a tuple's elements are their getitem nodes' values, not the tuple's
        return [(name, True) for item in value for name, _ in _buffers_of(item, ir)]
    viewed = False
    seen = 0
    while seen < 32:
        seen += 1
        if isinstance(value, ir.MutableBox):
            value = value.data
        elif isinstance(value, ir.BaseView):
            viewed = True
            value = value.data
        else:
            break
    if isinstance(value, ir.Buffer):
        try:
            return [(value.get_name(), viewed)]
        except Exception:  # noqa: BLE001 - an unnamed buffer
            return []
    return []
