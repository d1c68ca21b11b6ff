"""The statements of call() (and of the graph partitions it calls): allocations, views, launches, extern calls."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import libcst as cst
import libcst.matchers as m
from libcst.helpers import get_full_name_for_node

from harvest.model import (
    Buffer,
    ExternCall,
    Kernel,
    Launch,
    LaunchArg,
    LaunchView,
    TensorMeta,
)
from harvest.parse.patterns import (
    ALLOCATION,
    ARGS_CLEAR,
    ARGS_UNPACK,
    ASSERT_SIZE_STRIDE,
    ASSERT_SIZE_STRIDE_GROUPED,
    EXTERN_ROOTS,
    HOUSEKEEPING_CALL,
    ITEM_OF_NAME,
    LAUNCH,
    PARTITION_ARGS,
    PARTITION_CALL,
    REINTERPRET,
    STREAM,
)
from harvest.parse.values import (
    device_of,
    dtype_of,
    elements,
    is_block_size,
    keyword_args,
    node_code,
    plain,
    positional_args,
    size_tuple,
    tensor_name,
)
from harvest.shapes import evaluate
from harvest.syntax import QuickVisitor


class CallReader(QuickVisitor):
    """Walks call() in order (entering partitions where call invokes them) and records what each statement does."""

    def __init__(
        self,
        functions: dict[str, cst.FunctionDef],
        kernels: dict[str, tuple[Kernel, tuple[str, ...]]],
        examples: dict[str, TensorMeta],
        example_scalars: dict[str, int | float],
        placeholders: dict[str, TensorMeta],
    ) -> None:
        super().__init__()
        self.functions = functions
        self.kernels = kernels  # name -> (Kernel, the parameters a launch binds positionally)
        self.examples = examples
        self.example_scalars = example_scalars
        self.placeholders = placeholders
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.launches: list[Launch] = []
        self.externs: list[ExternCall] = []
        self.symbols: list[str] = []
        self.unparsed: list[str] = []
        self.buffers: dict[str, Buffer] = {}
        self.tensors: set[str] = set()  # every name known to hold a tensor, with or without a Buffer
        self.scalar_inputs: set[str] = set()
        self.symbol_sources: dict[str, str] = {}  # s77 -> arg0_1
        self.symbol_exprs: dict[str, str] = {}  # a size computed from symbols -> its expression, in source order
        self.returned: dict[str, str] = {}  # what a library call returned -> the dtype of its first tensor input
        self.function = ""
        self.top = False

    def read(self, qualname: str, top: bool = False) -> None:
        outer = (self.function, self.top)
        self.function, self.top = qualname, top
        self.functions[qualname].body.visit(self)
        self.function, self.top = outer

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseCompoundStatement) and not isinstance(node, cst.With):
            self.unparsed.append(node_code(node).strip())
            return False
        return super().on_visit(node)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        for statement in node.body:
            if not self._read_statement(statement):
                self.unparsed.append(node_code(statement).strip().rstrip(";"))
        return False

    # -- one small statement: True when understood --

    def _read_statement(self, statement: cst.BaseSmallStatement) -> bool:
        if isinstance(statement, (cst.Del, cst.Pass)) or m.matches(statement, PARTITION_ARGS):
            return True
        if isinstance(statement, cst.Return):
            if self.top:
                self.outputs = [tensor_name(e) or node_code(e) for e in elements(statement.value)]
            return True
        if m.matches(statement, ARGS_UNPACK):
            if self.top:
                self._add_inputs(cst.ensure_type(statement, cst.Assign).targets[0].target)
            return True
        if m.matches(statement, m.Expr(m.Call())):
            return self._read_call(cst.ensure_type(cst.ensure_type(statement, cst.Expr).value, cst.Call), None)
        if m.matches(statement, m.Assign(targets=[m.AssignTarget(m.Name())])):
            assign = cst.ensure_type(statement, cst.Assign)
            return self._read_assign(cst.ensure_type(assign.targets[0].target, cst.Name).value, assign.value)
        if m.matches(statement, m.Assign(targets=[m.AssignTarget(m.Tuple() | m.List())], value=PARTITION_CALL)):
            assign = cst.ensure_type(statement, cst.Assign)
            self.tensors.update(node_code(e) for e in elements(assign.targets[0].target))
            return self._read_partition(cst.ensure_type(assign.value, cst.Call))
        return False

    def _read_call(self, call: cst.Call, target: str | None) -> bool:
        if m.matches(call, ARGS_CLEAR | HOUSEKEEPING_CALL | STREAM):
            return True
        if m.matches(call, ASSERT_SIZE_STRIDE):
            self._add_returned_layout(call)
            return True  # an input's: read up front by _add_inputs
        if m.matches(call, ASSERT_SIZE_STRIDE_GROUPED):
            return True  # read up front by _add_inputs
        if m.matches(call, PARTITION_CALL):
            return self._read_partition(call)
        if m.matches(call, LAUNCH) and target is None:
            kernel = cst.ensure_type(cst.ensure_type(call.func, cst.Attribute).value, cst.Name).value
            if kernel in self.kernels:
                self._add_launch(kernel, call)
                return True
        op = get_full_name_for_node(call.func) or ""
        if any(op == root or op.startswith(root + ".") for root in EXTERN_ROOTS):
            out = keyword_args(call).get("out")
            out_name = target or (tensor_name(out) or node_code(out) if out is not None else None)
            args = tuple(node_code(arg) for arg in positional_args(call))
            self.externs.append(ExternCall(op, args, out_name, self._next_order(), self.function))
            if target is not None:
                self.tensors.add(target)
                self.returned[target] = next((self.buffers[a].meta.dtype for a in args if a in self.buffers), "")
            return True
        return False

    def _add_returned_layout(self, call: cst.Call) -> None:
        """`assert_size_stride(buf0, shape, stride, 'op')` after `buf0 = extern_kernels.convolution(...)`: the layout
        of what the library call returned (its dtype: that of its first tensor input, as for mm and convolution)."""
        positional = positional_args(call)
        if len(positional) < 3 or not isinstance(positional[0], cst.Name):
            return
        name = positional[0].value
        if name in self.returned and name not in self.buffers:
            meta = TensorMeta(size_tuple(positional[1]), size_tuple(positional[2]), self.returned[name])
            self._add_buffer(Buffer(name, meta, "extern"))

    def _read_assign(self, target: str, value: cst.BaseExpression) -> bool:
        if m.matches(value, ALLOCATION):
            self._add_allocation(target, cst.ensure_type(value, cst.Call))
            return True
        if m.matches(value, REINTERPRET):
            positional = positional_args(cst.ensure_type(value, cst.Call))
            self._add_view(target, cst.ensure_type(positional[0], cst.Name).value, positional[1:])
            return True
        source = value.value if isinstance(value, cst.Name) else None
        if source in self.buffers:
            self._add_alias(target, self.buffers[source])
            return True
        item_of_tensor = m.Subscript(value=m.Name(m.MatchIfTrue(self.tensors.__contains__)))
        if source in self.tensors or m.matches(value, item_of_tensor):
            self.tensors.add(target)  # a tensor without known meta, or an item of a fallback op's tuple result
            whole = source or node_code(cst.ensure_type(value, cst.Subscript).value)
            if whole in self.returned:  # `buf11 = buf10[0]` of `buf10 = torch.ops.aten.convolution_backward(...)`
                self.returned[target] = self.returned[whole]
            return True
        if self._is_symbolic(value):
            self.symbols.append(target)
            if source is not None:
                self.symbol_sources[target] = source
            else:  # `triton_poi_fused_mul_tanh_0_xnumel = 2048*s77`: its value follows from the example's
                self.symbol_exprs[target] = node_code(value)
            return True
        if m.matches(value, m.Call()):
            return self._read_call(cst.ensure_type(value, cst.Call), target)
        return False

    def _read_partition(self, call: cst.Call) -> bool:
        if isinstance(call.func, cst.Name):
            wanted = call.func.value
        else:
            wanted = "partition_" + node_code(cst.ensure_type(call.func, cst.Subscript).slice[0].slice).strip()
        qualname = next((q for q in self.functions if q == wanted or q.endswith("." + wanted)), None)
        if qualname is None:
            return False
        self.read(qualname)
        return True

    def _is_symbolic(self, value: cst.BaseExpression) -> bool:
        """A size expression: ints and names of scalar inputs or symbols only (`s77 = arg0_1`, `ps0 = 64*s0`)."""
        if m.findall(value, m.Call() | m.Attribute() | m.Subscript()):
            return False
        names = [cst.ensure_type(n, cst.Name).value for n in m.findall(value, m.Name())]
        return bool(names) and all(n in self.scalar_inputs or n in self.symbols for n in names)

    # -- records --

    def _add_inputs(self, target: cst.BaseExpression) -> None:
        """Graph inputs: meta from assert_size_stride (shape, stride) and get_args() or the fragments (dtype)."""
        asserted = {}  # torch 2.13 asserts an input just before its first use; partitions may assert too
        calls = [call for fn in self.functions.values() for call in _statement_calls(fn.body)]
        for node in (call for call in calls if m.matches(call, ASSERT_SIZE_STRIDE)):
            positional = positional_args(node)
            if len(positional) >= 3 and isinstance(positional[0], cst.Name):
                asserted[positional[0].value] = (size_tuple(positional[1]), size_tuple(positional[2]))
        for node in (call for call in calls if m.matches(call, ASSERT_SIZE_STRIDE_GROUPED)):
            positional = positional_args(node)
            if len(positional) < 3 or not all(isinstance(p, (cst.Tuple, cst.List)) for p in positional[:3]):
                continue
            names, shapes, strides = (list(elements(p)) for p in positional[:3])
            for name, shape, stride in zip(names, shapes, strides):
                if isinstance(name, cst.Name):
                    asserted[name.value] = (size_tuple(shape), size_tuple(stride))
        self.inputs = [node_code(e) for e in elements(target)]
        for index, name in enumerate(self.inputs):
            example = self.examples.get(name) or self.placeholders.get(name)
            if name in asserted:
                shape, stride = asserted[name]
                meta: TensorMeta | None = replace(example, shape=shape, stride=stride) if example else None
                meta = meta or TensorMeta(shape, stride, "")
            else:
                meta = None if name in self.example_scalars else example
            if meta is None:
                self.scalar_inputs.add(name)  # a Python scalar (or a tensor nothing describes)
            else:
                self._add_buffer(Buffer(name, meta, "input", input_index=index))

    def _next_order(self) -> int:
        return len(self.launches) + len(self.externs)

    def _add_launch(self, kernel_name: str, call: cst.Call) -> None:
        kernel, params = self.kernels[kernel_name]
        positional = positional_args(call)
        # Inductor passes compile-time constants it marked constexpr in triton_meta (`xnumel = 1`) positionally
        # too when the def does not annotate them: bind by the def when the count says so.
        passed = tuple(p for p in kernel.params if p in params or kernel.signature.get(p) == "constexpr"
                       and not is_block_size(p))
        if len(positional) == len(passed) != len(params):
            params = passed
        args = []
        for index, node in enumerate(positional):
            param = params[index] if index < len(params) else f"<extra {index}>"
            args.append(self._launch_arg(param, kernel.signature.get(param, ""), node))
        grid = keyword_args(call).get("grid")
        order = self._next_order()
        self.launches.append(Launch(kernel_name, tuple(args), order, self.function, node_code(grid) if grid else ""))

    def _launch_arg(self, param: str, param_type: str, node: cst.BaseExpression) -> LaunchArg:
        expr = node_code(node)
        name = tensor_name(node)
        if name is not None and (name in self.tensors or param_type.startswith("*")):
            return LaunchArg(param, expr, buffer=name, view=_launch_view(node))
        if m.matches(node, ITEM_OF_NAME):
            item_of = cst.ensure_type(cst.ensure_type(cst.ensure_type(node, cst.Call).func, cst.Attribute).value, cst.Name)
            return LaunchArg(param, expr, item_of=item_of.value)
        value = plain(node)
        if isinstance(value, int) and not isinstance(value, bool):
            return LaunchArg(param, expr, value=value)
        return LaunchArg(param, expr)

    def _add_allocation(self, target: str, call: cst.Call) -> None:
        positional = positional_args(call)
        kwargs = keyword_args(call)
        suffix = cst.ensure_type(call.func, cst.Name).value.removeprefix("empty_strided").lstrip("_")
        meta = TensorMeta(
            shape=size_tuple(positional[0]) if positional else (),
            stride=size_tuple(positional[1]) if len(positional) > 1 else (),
            dtype=dtype_of(positional[2] if len(positional) > 2 else kwargs.get("dtype")),
            device=suffix or device_of(kwargs.get("device")),
        )
        self._add_buffer(Buffer(target, meta, "empty"))

    def _add_view(self, target: str, base: str, rest: Sequence[cst.BaseExpression]) -> None:
        source = self.buffers.get(base)
        offset = size_tuple(rest[2]) if len(rest) > 2 else ()
        meta = TensorMeta(
            shape=size_tuple(rest[0]) if rest else (),
            stride=size_tuple(rest[1]) if len(rest) > 1 else (),
            dtype=source.meta.dtype if source else "",
            device=source.meta.device if source else "",
        )
        self._add_buffer(Buffer(target, meta, "view", base=base, offset=offset[0] if offset else 0))

    def _add_alias(self, target: str, source: Buffer) -> None:
        """`buf11 = buf8  # reuse`: the same tensor under a new name (an input's alias is origin "other")."""
        if source.origin == "input":
            self._add_buffer(replace(source, name=target, origin="other", base=source.name, input_index=None))
        elif source.origin == "view":  # already points at its storage's owner
            self._add_buffer(replace(source, name=target))
        else:  # keep the link to the buffer it reuses, so data flow follows it
            self._add_buffer(replace(source, name=target, origin="view", base=source.name, offset=0))

    def _add_buffer(self, buffer: Buffer) -> None:
        self.buffers[buffer.name] = buffer
        self.tensors.add(buffer.name)

    def scalar_values(self) -> dict[str, int | float]:
        values = {name: value for name, value in self.example_scalars.items() if name in self.scalar_inputs}
        for symbol, source in self.symbol_sources.items():
            if source in values:
                values[symbol] = values[source]
        for symbol, expr in self.symbol_exprs.items():
            value = evaluate(expr, values)
            if value is not None:
                values[symbol] = value
        return values


# -- small helpers over nodes ----------------------------------------------------------------------------------------


def _statement_calls(block: cst.BaseSuite) -> Iterator[cst.Call]:
    """The calls that are whole statements (`assert_size_stride(x, ...)`), in source order, nested blocks included:
    a walk over statements only, not over every expression node as a matcher search would make."""
    body = block.body if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            yield from (s.value for s in statement.body if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call))
        elif isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
            yield statement.value
        elif isinstance(statement, cst.BaseCompoundStatement):
            yield from _statement_calls(statement.body)
            for handler in getattr(statement, "handlers", ()):  # try: except ...
                yield from _statement_calls(handler.body)
            orelse = getattr(statement, "orelse", None)
            while orelse is not None:  # elif / else branches
                yield from _statement_calls(orelse.body)
                orelse = getattr(orelse, "orelse", None)
            final = getattr(statement, "finalbody", None)
            if final is not None:
                yield from _statement_calls(final.body)


def _launch_view(node: cst.BaseExpression) -> LaunchView | None:
    """`reinterpret_tensor(buf4, (2048, 512), (512, 1), 0)` -> its layout; None for anything else."""
    if not m.matches(node, REINTERPRET):
        return None
    positional = positional_args(cst.ensure_type(node, cst.Call))
    if len(positional) < 3 or not all(isinstance(p, cst.Tuple) for p in positional[1:3]):
        return None
    offset = size_tuple(positional[3]) if len(positional) > 3 else (0,)
    # an offset that is not one value stays its text: no size can be computed from it, so the argument gets no layout
    return LaunchView(size_tuple(positional[1]), size_tuple(positional[2]), offset[0] if len(offset) == 1 else node_code(positional[3]))
