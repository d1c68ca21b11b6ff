"""`build_reference`: the scan, the fragment and the binding put together into `def reference(...)` source."""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from harvest.model import FxDevice, FxExpr, FxRef, Graph, Kernel, Launch, LaunchArg, TensorMeta
from harvest.reference.access import Access, scan_kernel
from harvest.reference.binding import bind_inputs, bind_outputs, needed_expression
from harvest.reference.bound import FragmentBinding
from harvest.reference.foreach import narrow_foreach
from harvest.reference.fragment import (
    POOLING_PRIMS,
    PREPARE_SOFTMAX_ONLINE,
    Fragment,
    arg_buffer,
    buffer_meta_of,
    norm_dtype,
    numel_of,
    read_fragment,
    same_shape,
)
from harvest.reference.fx_args import fx_refs, fx_symbols, render_fx
from harvest.reference.pooling import pooling_statements
from harvest.reference.recorded import bind_recorded
from harvest.reference.scalars import bind_scalar_nodes
from harvest.reference.split import SPLIT_TARGETS, SPLIT_WORDS, bind_partial_inputs
from harvest.reference.unread import layout_symbols, made_up_statements
from harvest.reference.welford import bind_welford_split
from harvest.shapes import rename_symbols, same_sizes


@dataclass(frozen=True)
class Reference:
    """The generated eager reference of one kernel launch, and what it can and cannot check."""

    source: str  # `def reference(...)` source, in the module's names (the final names given); compiles
    params: tuple[str, ...]  # kernel parameters it takes, in kernel order (Inductor's names, as all fields below)
    checked: tuple[str, ...]  # output parameters whose expected value it returns
    unchecked: tuple[tuple[str, str], ...]  # (output parameter, reason)
    warnings: tuple[str, ...] = ()
    split_outputs: tuple[str, ...] = ()  # outputs that hold a split reduction's partials (check() combines them)
    scratch: tuple[str, ...] = ()  # outputs that are Inductor's workspaces, not values of the graph (not counted)
    source_of: str = "comment"  # what it was built from: "graph" (recorded at capture time) or "comment"

_HALF_FLOATS = ("torch.bfloat16", "torch.float16")


def _identifier(name: str, taken: set[str]) -> str:
    if keyword.iskeyword(name) or name in taken or name in {"torch", "operator", "device"}:
        return name + "_"
    return name


def _dtype_text(dtype: str) -> str:
    return f"torch.{dtype}"


def _shape_text(shape: tuple[int | str, ...], final: Mapping[str, str]) -> str:
    inner = ", ".join(rename_symbols(s, final) if isinstance(s, str) else str(s) for s in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


_SCANS = {"cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"}


def _holder_layout(arg: LaunchArg, holder: str | None, meta: TensorMeta | None, graph: Graph
                   ) -> tuple[tuple, tuple, int] | None:
    """(shape, stride, offset from its start to the argument's) of the buffer that holds an input's value, when the
    launch passes a view of it in another layout (`buf98 = reinterpret_tensor(buf97, ...)`, or a reinterpret_tensor
    in the launch): None when the argument is that buffer as it is, or the chain of views is not known."""
    if holder is None or meta is None or (arg.buffer == holder and arg.view is None):
        return None
    held = graph.buffers.get(holder)
    if held is None or not same_sizes(held.meta.shape, meta.shape) \
            or not all(isinstance(size, int) for size in (*held.meta.shape, *held.meta.stride)):
        return None  # (a symbolic layout: its sizes are not names the reference has bound)
    offset, at = (arg.view.offset if arg.view else 0), arg.buffer
    while at != holder:
        buffer = graph.buffers.get(at or "")
        if buffer is None or buffer.origin != "view" or buffer.base is None:
            return None
        offset, at = (offset + buffer.offset if isinstance(offset, int) and isinstance(buffer.offset, int) else None), buffer.base
        if offset is None:
            return None
    passed = arg.view or getattr(graph.buffers.get(arg.buffer or ""), "meta", None)
    if not isinstance(offset, int) or (offset == 0 and passed is not None and (passed.shape, passed.stride) ==
                                       (held.meta.shape, held.meta.stride)):
        return None  # (the same memory in the same layout: the argument as it is)
    return held.meta.shape, held.meta.stride, offset


def _scan_length(fragment: Fragment, name: str) -> int | None:
    """How many values a scan node combines into its last output (the length of its dim; None for another node
    or a symbolic length)."""
    op = fragment.ops.get(name)
    if op is None or op.family not in _SCANS or len(op.args) < 2 or not isinstance(op.args[0], FxRef):
        return None
    source = fragment.ops.get(op.args[0].name) or fragment.placeholders.get(op.args[0].name)
    dim = op.args[1].text if isinstance(op.args[1], FxExpr) else ""
    if source is None or source.meta is None or not re.fullmatch(r"-?\d+", dim) or not source.meta.shape:
        return 1 if source is not None and source.meta is not None and not source.meta.shape else None
    size = source.meta.shape[int(dim) % len(source.meta.shape)]
    return size if isinstance(size, int) else None


def _count_text(count: int | FxExpr | None, names: Mapping[str, str], final: Mapping[str, str]) -> str:
    """A split's count as Python source: `32`, `s75`, `(s0 * 2048)`."""
    if isinstance(count, FxExpr):
        text = render_fx(count, names, final)
        return text if re.fullmatch(r"\w+", text) else f"({text})"
    return str(count) if count else ""


def _generate(kernel: Kernel, fragment: Fragment, binding: FragmentBinding, graph: Graph, launch: Launch,
              final: Mapping[str, str]) -> Reference:
    """The reference's source, written with each kernel parameter (and size symbol that is one) in its final name."""

    def the(name: str) -> str:
        return final.get(name, name)

    by_param = {arg.param: arg for arg in launch.args}
    # Size symbols: from the shapes of bound inputs first, else from integer kernel arguments passed as the symbol.
    symbols: dict[str, str] = {}
    symbol_params: list[str] = []
    for name in binding.inputs:
        meta = binding.input_meta.get(name)
        for dim, size in enumerate(meta.shape if meta else ()):
            if isinstance(size, str) and re.fullmatch(r"[A-Za-z_]\w*", size) and size not in symbols:
                symbols[size] = f"{name}.shape[{dim}]"
    for name in binding.inputs:  # then a symbol a size is a multiple of (`2*s16`: a flattened batch)
        meta = binding.input_meta.get(name)
        for dim, size in enumerate(meta.shape if meta else ()):
            scaled = re.fullmatch(r"(\d+)\*([A-Za-z_]\w*)|([A-Za-z_]\w*)\*(\d+)", str(size).replace(" ", ""))
            if scaled:
                factor, symbol = (scaled.group(1), scaled.group(2)) if scaled.group(1) else (scaled.group(4), scaled.group(3))
                symbols.setdefault(symbol, f"{name}.shape[{dim}] // {factor}")
    for arg in launch.args:
        if arg.expr in symbols or not re.fullmatch(r"[A-Za-z_]\w*", arg.expr) or arg.param.endswith("numel"):
            continue
        if kernel.signature.get(arg.param, "").startswith("i"):
            symbols[arg.expr] = arg.param
            symbol_params.append(arg.param)

    order: list[str] = []
    checked: list[str] = []
    unchecked = dict(binding.unchecked)
    for param, name in binding.outputs.items():
        attempt = list(order)
        why = needed_expression(name, fragment, binding, symbols, attempt, set())
        if why is None and name in binding.inputs and not binding.exact:
            why = f"{param} stores {name} unchanged from its input"
        if why is not None:
            unchecked[param] = why
            continue
        missing = [s for s in fx_symbols(getattr(binding.partial_outputs.get(param), "scale", None)) if s not in symbols]
        if missing:
            unchecked[param] = f"symbolic size {missing[0]} in the count {name} is of cannot be bound from the kernel's inputs"
            continue
        order = attempt
        checked.append(param)

    position = {name: index for index, name in enumerate(fragment.ops)}
    order.sort(key=position.__getitem__)  # fragment order is topological and reads like the original
    computed = [n for n in order if n not in binding.from_partials]
    used_names = {ref for n in computed for v in (*fragment.ops[n].args, *fragment.ops[n].kwargs.values())
                  for ref in fx_refs(v)}
    used_names |= {binding.from_partials[n][0] for n in order if n in binding.from_partials}
    used_inputs = {name: binding.inputs[name] for name in binding.inputs
                   if name in used_names or name in {binding.outputs[p] for p in checked}}
    made_up = [name for name in binding.unread if name in used_names and name not in binding.inputs]
    used_symbols = {s for n in computed for v in (*fragment.ops[n].args, *fragment.ops[n].kwargs.values())
                    for s in fx_symbols(v)}
    used_symbols |= {s for n in order if n in binding.from_partials for s in fx_symbols(binding.from_partials[n][1].scale)}
    used_symbols |= {s for p in checked if p in binding.partial_outputs for s in fx_symbols(binding.partial_outputs[p].scale)}
    used_symbols |= {s for name in made_up for s in layout_symbols(binding.unread[name])}
    params = [p for p in kernel.params if p in used_inputs.values()
              or (p in symbol_params and any(symbols[s] == p for s in used_symbols))]

    taken = set(kernel.params)
    names = {n: _identifier(n, taken) for n in [*used_inputs, *made_up, *order]}
    lines = [f"def reference({', '.join(map(the, params))}):"]
    for name, param in sorted(used_inputs.items(), key=lambda item: kernel.params.index(item[1])):
        meta = binding.input_meta.get(name)
        if param in binding.scalar_inputs:
            dtype = f", dtype={_dtype_text(meta.dtype)}" if meta else ""
            lines.append(f"    {names[name]} = torch.as_tensor({the(param)}{dtype})")
            continue
        buffer_meta = buffer_meta_of(graph, arg_buffer(by_param[param]))
        # Inductor loads fp16/bf16 values into fp32, computes in fp32 and rounds once, at the store: so does the
        # reference (rounding after every op, as eager would, makes it differ from a correct kernel).
        upcast = ".float()" if (meta and norm_dtype(meta.dtype) in ("bfloat16", "float16")) else ""
        holder = _holder_layout(by_param[param], binding.input_buffers.get(name), meta, graph)
        if holder is not None:
            # The kernel is passed another view of the buffer that holds the value (a buffer reused in place under
            # a new layout): the value is that buffer's memory in its own layout, from where the view starts.
            shape, stride, offset = holder
            start = f"{the(param)}.storage_offset() - {offset}" if offset else f"{the(param)}.storage_offset()"
            lines.append(f"    {names[name]} = {the(param)}.as_strided({_shape_text(shape, final)}, "
                         f"{_shape_text(stride, final)}, {start}){upcast}")
        elif meta and buffer_meta and not same_shape(meta, buffer_meta) and numel_of(meta.shape) is not None:
            lines.append(f"    {names[name]} = {the(param)}.reshape{_shape_text(meta.shape, final)}{upcast}")
        elif meta and buffer_meta and not same_sizes(meta.shape, buffer_meta.shape) \
                and sum(not isinstance(size, int) for size in meta.shape) == 1:
            # (one symbolic size: the one the element count leaves, before the reference has bound its symbols)
            shape = tuple(size if isinstance(size, int) else -1 for size in meta.shape)
            lines.append(f"    {names[name]} = {the(param)}.reshape{shape}{upcast}")
        else:
            lines.append(f"    {names[name]} = {the(param)}{upcast}")
    for symbol in sorted(used_symbols):
        source = symbols[symbol]
        if "." in source:
            base, rest = source.split(".", 1)
            source = f"{names.get(base, base)}.{rest}"
        else:
            source = the(source)
        lines.append(f"    {the(symbol)} = {source}")
    if made_up or any(isinstance(v, FxDevice) for n in order for v in fragment.ops[n].kwargs.values()):
        first = next((p for p in params if p not in binding.scalar_inputs and p not in symbol_params), None)
        if first:
            lines.append(f"    device = {the(first)}.device")
        else:  # nothing read to take it from: the check passes the device it runs on
            lines[0] = lines[0].replace("):", ", device):") if params else "def reference(device):"
    for name in made_up:
        meta = binding.unread[name]
        lines.extend(f"    {line}" for line in made_up_statements(names[name], name, meta, _shape_text(meta.shape, final),
                                                                   _shape_text(meta.stride, final)))
    for name in order:
        op = fragment.ops[name]
        if name in binding.from_partials:
            partial, split = binding.from_partials[name]
            parts, verb = SPLIT_WORDS[split.reduce]
            scale = _count_text(split.scale, names, final)
            of = f"{names[name]} * {scale}" if scale else names[name]
            then = f" and divides by {scale}" if scale else ""
            lines.append(f"    # Split reduction, stage 2: {names[partial]} holds {parts} of {of} along dim "
                         f"{list(split.dims)}; the kernel {verb} them{then}.")
            call = f"{SPLIT_TARGETS[split.reduce]}({names[partial]}, {list(split.dims)})"
            if scale:
                call += f" / {scale}"
        elif op.target == "operator.getitem":
            call = f"{render_fx(op.args[0], names, final)}[{render_fx(op.args[1], names, final)}]"
        elif (op.target == "torch.ops.prims.convert_element_type.default" and len(op.args) == 2
              and isinstance(op.args[1], FxExpr) and op.args[1].text in _HALF_FLOATS):
            # Inside a kernel Inductor keeps fp16/bf16 values in fp32 (rounded only where one is stored): so does
            # the reference; check() rounds an output of that dtype once, as the kernel's store does.
            call = (f"torch.ops.prims.convert_element_type.default({render_fx(op.args[0], names, final)}, "
                    f"torch.float32)  # {op.args[1].text.removeprefix('torch.')} kept in fp32, as in the kernel")
        elif op.target == PREPARE_SOFTMAX_ONLINE and len(op.args) == 2:
            # Inductor's online-softmax prim: (the max along dim, the sum of exp(x - max)), both keeping dim.
            x, dim = (render_fx(v, names, final) for v in op.args)
            most = f"torch.ops.aten.amax.default({x}, [{dim}], True)"
            call = f"({most}, torch.ops.aten.sum.dim_IntList(torch.ops.aten.exp.default({x} - {most}), [{dim}], True))"
        elif op.target == "torch.ops.prims.fma.default" and len(op.args) == 3:
            # Inductor's own prim (registered only once Inductor is imported): a * b + c.
            a, b, c = (render_fx(v, names, final) for v in op.args)
            call = f"torch.ops.aten.add.Tensor(torch.ops.aten.mul.Tensor({a}, {b}), {c})"
        elif op.target in POOLING_PRIMS and (statements := pooling_statements(
                op, names[name], [render_fx(v, names, final) for v in op.args])) is not None:
            lines.extend(f"    {line}" for line in statements)
            continue
        else:
            parts = [render_fx(v, names, final) for v in op.args]
            parts += [f"{the(k)}={render_fx(v, names, final)}" for k, v in op.kwargs.items()]
            call = f"{op.target}({', '.join(parts)})"
        lines.append(f"    {names[name]} = {call}")

    warnings = list(fragment.warnings) + binding.warnings
    results: list[str] = []
    split_outputs: list[str] = []
    for param in list(checked):
        name = binding.outputs[param]
        arg = by_param[param]
        meta = buffer_meta_of(graph, arg_buffer(arg))
        node_meta = fragment.ops[name].meta if name in fragment.ops else binding.input_meta.get(name)
        expr = names[name]
        split = binding.partial_outputs.get(param)
        if split is not None:
            chunks = numel_of(tuple(meta.shape[d] for d in split.dims)) if meta is not None and split.rows is None else None
            welford = ""
            if split.reduce == "welford":
                welford = f'"part": {split.part}, "of": [{", ".join(repr(the(p)) for p in split.of)}], '
                if param == next(p for p in split.of if p in binding.partial_outputs):
                    wholes = [names[binding.outputs[p]] for p in split.of if p in binding.partial_outputs]
                    stage = ("a middle stage: the kernel combines the chunks it reads into" if split.middle
                             else "stage 1: the kernel stores each of")
                    lines.append(f"    # Split Welford, {stage} {chunks or 'several'} chunks' "
                                 f"mean, m2 and weight along dim {list(split.dims)};")
                    lines.append(f"    # check() combines them (Chan's formula) and compares with {', '.join(wholes)} "
                                 f"({split.terms} values per element).")
            elif split.rows is not None:
                welford = f'"rows": {split.rows}, ' + (f'"blocks": {split.blocks}, ' if split.blocks > 1 else "")
                what = f"{expr} (its {split.blocks} column sums, stacked)" if split.blocks > 1 else expr
                lines.append(f"    # Mix-order reduction: each program stores its rows' partial sums of {what} as one "
                             f"row of {split.rows} in {the(param)}" + (", a block of rows per sum;" if split.blocks > 1 else ";"))
                lines.append("    # check() adds up the rows (those no program wrote stay zero) and compares with "
                             f"{expr}.")
            else:
                parts, verb = SPLIT_WORDS[split.reduce]
                lines.append(f"    # Split reduction, stage 1: the kernel stores {expr} as {chunks or 'several'} {parts} "
                             f"along dim {list(split.dims)};")
                count = f"{split.terms} values" if split.terms is not None else "all the values it reduces"
                lines.append(f"    # check() {verb} them over that dim and compares with {expr} ({count} per element).")
            scale = _count_text(split.scale, names, final)
            if scale:
                lines.append(f"    # The partials are sums: {scale} times {expr} in all.")
            scaled = f"{expr} * {scale}" if scale else expr
            terms = split.terms
            source = fragment.ops[name].args[0] if name in fragment.ops and fragment.ops[name].args else None
            if terms is None and isinstance(source, FxRef) and source.name in names:
                terms = f"{names[source.name]}.numel() // max({expr}.numel(), 1)"  # a symbolic size: counted at run time
            results.append(f'"{the(param)}": {{"reduce": "{split.reduce}", "dims": {list(split.dims)}, '
                           f'"terms": {terms}, {welford}"expected": {scaled}}}')
            split_outputs.append(param)
            continue
        reshaped = False
        if meta is not None and node_meta is not None:
            if not same_sizes(node_meta.shape, meta.shape):
                reshaped = True
                if numel_of(node_meta.shape) is None or numel_of(node_meta.shape) != numel_of(meta.shape):
                    checked.remove(param)
                    unchecked[param] = (f"{name} has shape {list(node_meta.shape)} but {param} holds "
                                        f"{list(meta.shape)}")
                    continue
                expr = f"{expr}.reshape{_shape_text(meta.shape, final)}"
        length = _scan_length(fragment, name)
        if length is not None:
            # A scan adds up to `length` values per output, in the kernel's order (blocks, then a carry between
            # them): check() widens the tolerance as for a sum of that many terms.
            results.append(f'"{the(param)}": {{"reduce": "scan", "dims": [], "terms": {length}, "expected": {expr}}}')
            continue
        summed, rows = _summed_terms(fragment, name, binding)
        if summed is not None:
            # Computed through a sum of `summed` values (a norm's statistics, a softmax's denominator): the kernel and
            # eager add them in other orders, so check() widens the tolerance as for such a sum, by the size of the
            # values of each row the sum ran along (`dims`: of the output, when it has the sum's input's shape).
            dims = list(rows[1]) if rows is not None and not reshaped and node_meta is not None \
                and tuple(map(str, node_meta.shape)) == rows[0] else []
            results.append(f'"{the(param)}": {{"reduce": "through", "dims": {dims}, "terms": {summed}, "expected": {expr}}}')
            continue
        results.append(f'"{the(param)}": {expr}')
    lines.append("    return {" + ", ".join(results) + "}")
    source = "\n".join(lines) + "\n"
    compile(source, f"<reference of {kernel.name}>", "exec")
    ordered_unchecked = tuple((p, unchecked[p]) for p in kernel.params if p in unchecked)
    return Reference(source, tuple(params), tuple(p for p in kernel.params if p in checked), ordered_unchecked,
                     tuple(warnings), tuple(split_outputs), tuple(p for p in kernel.params if p in binding.scratch))


# Reductions that add their values up (a max or min picks one: no rounding builds up).
_SUMMING = {"sum", "mean", "var", "var_mean", "std", "std_mean", "prepare_softmax_online", "_softmax", "_log_softmax",
            "logsumexp", "native_layer_norm", "native_group_norm", "native_batch_norm", "_native_batch_norm_legit",
            "_native_batch_norm_legit_functional", "prod", "cumsum", "cumprod"}


def _summed_terms(fragment: Fragment, name: str, binding: FragmentBinding
                  ) -> tuple[int | None, tuple[tuple[str, ...], tuple[int, ...]] | None]:
    """The most values a sum on the way to node `name` adds up (None when no summing reduction of a known size is
    computed on the way: what the kernel reads is taken as given), and that sum's (input shape, reduced dims) when
    its result keeps the reduced dims as 1s (keepdim), else None."""
    most, rows, seen, stack = 0, None, set(), [name]
    while stack:
        node = stack.pop()
        if node in seen or node in binding.inputs or node not in fragment.ops:
            continue
        seen.add(node)
        op = fragment.ops[node]
        refs = [r for v in (*op.args, *op.kwargs.values()) for r in fx_refs(v)]
        source = fragment.ops.get(refs[0]) if op.target == "operator.getitem" and refs else None
        if source is not None and source.family == "prepare_softmax_online" and op.args[1:2] == (FxExpr(("0",)),):
            stack.extend(r for v in source.args for r in fx_refs(v))  # the max of the pair: no sum on the way
            continue
        if op.family in _SUMMING and refs:
            whole = fragment.meta_of(refs[0])
            part = op.meta or next((o.meta for o in fragment.ops.values() if o.target == "operator.getitem"
                                     and o.args and o.args[0] == FxRef(node) and o.meta is not None), None)
            counts = (numel_of(whole.shape) if whole else None, numel_of(part.shape) if part else None)
            if all(counts) and counts[0] % counts[1] == 0 and counts[0] // counts[1] > most:
                most = counts[0] // counts[1]
                shape, kept = tuple(map(str, whole.shape)), tuple(map(str, part.shape))
                dims = tuple(i for i, (w, k) in enumerate(zip(shape, kept)) if k == "1" and w != "1")
                rows = (shape, dims) if len(kept) == len(shape) and dims else None
        stack.extend(refs)
    return most or None, rows


def kernel_outputs(kernel: Kernel) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(parameters the kernel writes, those of them it never reads), in parameter order."""
    try:
        access = scan_kernel(kernel)
    except SyntaxError:
        outputs = tuple(p for p in kernel.params if p.startswith(("out_ptr", "in_out_ptr")))
        return outputs, tuple(p for p in outputs if p.startswith("out_ptr"))
    outputs = tuple(p for p in kernel.params if p in access.stored)
    return outputs, tuple(p for p in outputs if p not in access.loaded)


def _outputs_of(kernel: Kernel, access: Access | None) -> list[str]:
    if access is not None:
        return [p for p in kernel.params if p in access.last_store]
    return [p for p in kernel.params if p.startswith(("out_ptr", "in_out_ptr"))]


def build_reference(kernel: Kernel, launch: Launch, graph: Graph, final_names: Mapping[str, str] | None = None,
                    recorded_graph: Mapping | None = None) -> Reference:
    """Eager reference of `kernel` as launched by `launch`, its source written in `final_names` (Inductor parameter
    -> the module's name; Inductor's names where absent); outputs it cannot derive are listed with a reason.

    From `recorded_graph` (the kernel's graph as the capture recorded it: harvest.capture.kernel_graph) when there is
    one, with every name bound exactly; else from the kernel's `# Graph fragment:` comment, bound by heuristics.
    """
    access: Access | None = None
    fallback = ""
    if kernel.kind == "user":  # what it stores, read from its body: a user's names say nothing
        outputs = _outputs_of(kernel, scan_kernel(kernel))
        reason = "a user-written Triton kernel: no graph ops to compute it from (the record compares it)"
        return Reference("def reference():\n    return {}\n", (), (), tuple((p, reason) for p in outputs), ())
    if recorded_graph and not recorded_graph.get("error"):
        try:
            access = scan_kernel(kernel)
            fragment, binding = bind_recorded(kernel, launch, graph, access, dict(recorded_graph))
            reference = _generate(kernel, fragment, binding, graph, launch, final_names or {})
            return replace(reference, source_of="graph")
        except Exception as exc:  # noqa: BLE001 - the comment is the fallback; say why it was needed
            fallback = f"the recorded graph could not be used ({type(exc).__name__}: {exc}); built from the comment"
    elif recorded_graph:
        fallback = f"the capture could not record this kernel's graph ({recorded_graph['error']}); built from the comment"
    try:
        access = scan_kernel(kernel)
        if not kernel.comment.fragment:
            raise _NoFragment()
        fragment = read_fragment(kernel, graph)
        binding = FragmentBinding()
        bind_inputs(kernel, launch, graph, access, fragment, binding)
        bind_scalar_nodes(kernel, launch, graph, fragment, set(binding.inputs))
        bind_outputs(kernel, launch, graph, access, fragment, binding)
        bind_partial_inputs(fragment, binding)
        bind_welford_split(kernel, graph, launch, access, fragment, binding)
        narrow_foreach(fragment, binding)
        reference = _generate(kernel, fragment, binding, graph, launch, final_names or {})
        if fallback:
            reference = replace(reference, warnings=(fallback, *reference.warnings))
        return reference
    except _NoFragment:
        reason = "the kernel has no # Graph fragment comment (torch < 2.5 or a template kernel)"
    except Exception as exc:  # noqa: BLE001 - a reference is optional; the module still gets written
        reason = f"internal error building the reference: {type(exc).__name__}: {exc}"
    outputs = _outputs_of(kernel, access)
    source = "def reference():\n    return {}\n"
    return Reference(source, (), (), tuple((p, reason) for p in outputs), (fallback,) if fallback else ())


def reference_json(reference: Reference, final_names: Mapping[str, str]) -> dict:
    """The manifest's summary of a reference: what it was built from, and per output it writes (in the module's
    names) either "compared" or why the reference cannot compute it."""
    outputs = {final_names.get(p, p): "compared" for p in reference.checked}
    outputs |= {final_names.get(p, p): ("scratch: " if p in reference.scratch else "") + why for p, why in reference.unchecked}
    compared = len(reference.checked)
    missing = [p for p, _ in reference.unchecked if p not in reference.scratch]
    coverage = "none" if not compared and (missing or not reference.scratch) else ("full" if not missing else "partial")
    built_from = "recorded graph" if reference.source_of == "graph" else "graph fragment comment"
    return {"built_from": built_from, "coverage": coverage, "outputs": outputs}


class _NoFragment(Exception):
    pass
