"""Triton expressions and statements as C++: loads, stores, arithmetic with Triton's types, casts, math functions,
where, Inductor's helpers, Philox random numbers."""

from __future__ import annotations

import ast

from harvest.syntax import dotted, pointer_of
from harvest.twin.body import Axes
from harvest.twin.cpp import Emitter, Value, Var, literal, promote
from harvest.twin.facts import FLOATS, HALVES, TWIN_DTYPE_OF_TL, NoTwin

# Math functions: Triton name -> CUDA function for fp32 (fp64 uses the name without the f suffix).
# libdevice.* are libdevice's accurate functions, like CUDA's; tl.* / tl.math.* exp, log, sin, cos are Triton's
# fast approximations (ex2.approx, lg2.approx, ...), like CUDA's __expf intrinsics.
ACCURATE = {
    "exp": "expf", "exp2": "exp2f", "expm1": "expm1f", "log": "logf", "log2": "log2f", "log10": "log10f",
    "log1p": "log1pf", "sqrt": "sqrtf", "rsqrt": "rsqrtf", "tanh": "tanhf", "erf": "erff", "erfc": "erfcf",
    "erfinv": "erfinvf", "sin": "sinf", "cos": "cosf", "tan": "tanf", "asin": "asinf", "acos": "acosf",
    "atan": "atanf", "sinh": "sinhf", "cosh": "coshf", "asinh": "asinhf", "acosh": "acoshf", "atanh": "atanhf",
    "floor": "floorf", "ceil": "ceilf", "trunc": "truncf", "nearbyint": "rintf", "rint": "rintf", "round": "roundf",
    "abs": "fabsf", "fabs": "fabsf", "pow": "powf", "atan2": "atan2f", "fmod": "fmodf", "copysign": "copysignf",
    "lgamma": "lgammaf", "hypot": "hypotf", "cbrt": "cbrtf", "fma": "fmaf", "sqrt_rn": "sqrtf", "div_rn": "__fdiv_rn",
}


FAST = {"exp": "__expf", "log": "__logf", "sin": "__sinf", "cos": "__cosf"}


PREDICATES = {"isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "isfinited": "isfinite", "signbit": "signbit"}


class Expressions:
    """Translates Triton expressions into C++ expressions of known dtype, in the emitter's current scope."""

    def __init__(self, emitter: Emitter, axes: Axes, special: dict[str, Value] | None = None):
        self.out = emitter
        self.axes = axes
        self.special = special if special is not None else {}  # (the caller's dict: it may add to it later)

    def __call__(self, node: ast.expr) -> Value:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise NoTwin(f"cannot translate {ast.unparse(node)!r}")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, bool):
            return Value("true" if node.value else "false", "i1")
        if isinstance(node.value, int):
            return Value(str(node.value), "int")
        if isinstance(node.value, float):
            return Value(repr(node.value), "float")
        raise NoTwin(f"constant {node.value!r}")

    def _Name(self, node: ast.Name) -> Value:
        if node.id in self.special:
            return self.special[node.id]
        var = self.out.lookup(node.id)
        if var is not None:
            return Value(var.cname, var.dtype)
        if node.id in self.out.facts.constexprs:
            return Value(str(self.out.facts.constexprs[node.id]), "int")
        raise NoTwin(f"{node.id} is used where the twin has no value for it")

    def _Subscript(self, node: ast.Subscript) -> Value:
        # x[:, None], x[None, :]: broadcasting, which one thread per element does not need
        return self(node.value)

    def _UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self(node.operand)
        if isinstance(node.op, ast.USub):
            if operand.dtype in ("int", "float"):
                return Value(f"-{operand.code}", operand.dtype)
            if operand.dtype in HALVES:
                return self.in_float(f"(-{self.out.cast(operand, 'fp32')})", operand.dtype)
            return Value(f"(-{operand.code})", operand.dtype)
        if isinstance(node.op, (ast.Invert, ast.Not)):
            if operand.dtype == "i1" or isinstance(node.op, ast.Not):
                return Value(f"(!{operand.code})", "i1")
            return Value(f"(~{operand.code})", operand.dtype)
        if isinstance(node.op, ast.UAdd):
            return operand
        raise NoTwin(f"unary operator in {ast.unparse(node)!r}")

    def _BinOp(self, node: ast.BinOp) -> Value:
        left, right = self(node.left), self(node.right)
        op = node.op
        if isinstance(op, ast.Div):
            dtype = promote(left.dtype, right.dtype)
            if dtype not in FLOATS:
                dtype = "fp32"
            if dtype in HALVES:
                return self.in_float(f"({self.out.cast(left, 'fp32')} / {self.out.cast(right, 'fp32')})", dtype)
            return Value(f"({self.out.cast(left, dtype)} / {self.out.cast(right, dtype)})", dtype)
        dtype = promote(left.dtype, right.dtype)
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and dtype in FLOATS:
            raise NoTwin(f"bitwise operator on floats in {ast.unparse(node)!r}")
        if isinstance(op, ast.FloorDiv):
            if dtype in FLOATS:
                raise NoTwin(f"floor division of floats in {ast.unparse(node)!r}")
            symbol = "/"  # Triton's // on integers truncates, as C++ does
        elif isinstance(op, ast.Mod):
            if dtype in FLOATS:
                return Value(f"{'fmod' if dtype == 'fp64' else 'fmodf'}({self.out.cast(left, dtype)}, {self.out.cast(right, dtype)})", dtype)
            symbol = "%"  # C remainder, as Triton's % on integers
        else:
            symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
                      ast.LShift: "<<", ast.RShift: ">>"}.get(type(op))
            if symbol is None:
                raise NoTwin(f"operator in {ast.unparse(node)!r}")
        if dtype in HALVES:
            return self.in_float(f"({self.out.cast(left, 'fp32')} {symbol} {self.out.cast(right, 'fp32')})", dtype)
        code = f"({self.out.cast(left, dtype)} {symbol} {self.out.cast(right, dtype)})"
        if dtype == "i1" and symbol in "&|^":
            code = f"static_cast<bool>{code}"
        return Value(code, dtype)

    def _Compare(self, node: ast.Compare) -> Value:
        if len(node.ops) != 1:
            raise NoTwin(f"chained comparison {ast.unparse(node)!r}")
        left, right = self(node.left), self(node.comparators[0])
        dtype = promote(left.dtype, right.dtype)
        symbol = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}.get(type(node.ops[0]))
        if symbol is None:
            raise NoTwin(f"comparison {ast.unparse(node)!r}")
        if dtype in HALVES:  # compared as floats: exact, and torch builds with __CUDA_NO_HALF_OPERATORS__
            dtype = "fp32"
        return Value(f"({self.out.cast(left, dtype)} {symbol} {self.out.cast(right, dtype)})", "i1")

    def _Attribute(self, node: ast.Attribute) -> Value:
        raise NoTwin(f"attribute {ast.unparse(node)!r} used as a value")

    def _Call(self, node: ast.Call) -> Value:
        name = dotted(node.func)
        args = node.args
        kwargs = {k.arg: k.value for k in node.keywords}
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to" and not name.startswith(("tl.", "libdevice", "triton_helpers")):
            value = self(node.func.value)
            dtype = self.dtype_of(args[0] if args else kwargs["dtype"])
            bitcast = kwargs.get("bitcast")
            if bitcast is not None and isinstance(bitcast, ast.Constant) and bitcast.value:
                return Value(f"hv::bitcast<{self.out.ctype(dtype)}>({value.code})", dtype)
            return Value(self.out.cast(value, dtype), dtype)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "broadcast_to" and not name.startswith("tl."):
            return self(node.func.value)
        if name == "float" and len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            return Value(repr(float(args[0].value)), "float")
        short = name.split(".")[-1]
        if name in ("tl.broadcast_to", "tl.expand_dims"):
            return self(args[0])
        if name in ("tl.full", "tl.zeros", "tl.full_like", "tl.zeros_like"):
            return self._full(name, node)
        if name == "tl.where":
            cond, a, b = (self(x) for x in args)
            dtype = promote(a.dtype, b.dtype)
            return Value(f"({self.out.cast(cond, 'i1')} ? {self.out.cast(a, dtype)} : {self.out.cast(b, dtype)})", dtype)
        if name == "tl.load":
            return self.load(node)
        if name == "tl.cdiv":  # integers: the number of blocks of b that cover a
            a, b = self(args[0]), self(args[1])
            dtype = promote(a.dtype, b.dtype)
            if dtype not in ("i32", "i64", "int"):
                raise NoTwin("tl.cdiv() of floats")
            x, y = self.out.cast(a, dtype), self.out.cast(b, dtype)
            return Value(f"(({x} + {y} - 1) / {y})", dtype)
        if name in ("triton_helpers.maximum", "triton_helpers.minimum", "tl.maximum", "tl.minimum"):
            a, b = self(args[0]), self(args[1])
            dtype = promote(a.dtype, b.dtype)
            nan = "Nan" if name.startswith("triton_helpers") else ""
            function = ("hv::maximum" if "max" in short else "hv::minimum") + nan
            if dtype in HALVES:  # picks one of the two values: the same in float
                return self.in_float(f"{function}({self.out.cast(a, 'fp32')}, {self.out.cast(b, 'fp32')})", dtype)
            return Value(f"{function}({self.out.cast(a, dtype)}, {self.out.cast(b, dtype)})", dtype)
        if name in ("tl.sigmoid", "tl.math.sigmoid"):
            x = self.float_arg(args[0], name)
            one = literal(1, x.dtype)
            exp = "exp" if x.dtype == "fp64" else "__expf"
            return Value(f"({one} / ({one} + {exp}(-{x.code})))", x.dtype)
        if name in ("tl.fma", "libdevice.fma", "tl.math.fma"):
            values = [self.float_arg(a, name) for a in args]
            dtype = values[0].dtype
            return Value(f"{'fma' if dtype == 'fp64' else 'fmaf'}({', '.join(self.out.cast(v, dtype) for v in values)})", dtype)
        if short in PREDICATES and name.startswith(("libdevice.", "tl.math.", "tl.")):
            x = self.float_arg(args[0], name)
            return Value(f"static_cast<bool>({PREDICATES[short]}({x.code}))", "i1")
        if short == "abs" and name.startswith(("tl.", "libdevice.")):
            x = self(args[0])
            if x.dtype not in FLOATS:
                return Value(f"(({x.code}) < 0 ? -({x.code}) : ({x.code}))", x.dtype)
        if name.startswith(("libdevice.", "tl.math.", "tl.")) and (short in ACCURATE or short in FAST):
            return self.math(name, short, args)
        if name in ("tl.rand", "tl.randn"):
            seed, offset = self(args[0]), self(args[1])
            return Value(f"hv::{short}(static_cast<uint64_t>({seed.code}), static_cast<uint32_t>({offset.code}))", "fp32")
        raise NoTwin(f"{name or ast.unparse(node.func)}() has no CUDA twin translation")

    # -- pieces

    def in_float(self, code: str, dtype: str) -> Value:
        """fp16/bf16 arithmetic done in fp32 and rounded once to `dtype`: the same result for + - * / (fp32 has more
        than twice their precision), and what torch's load_inline flags allow (__CUDA_NO_HALF_OPERATORS__)."""
        return Value(self.out.cast(Value(code, "fp32"), dtype), dtype)

    def dtype_of(self, node: ast.expr) -> str:
        text = dotted(node)
        if text.startswith(("tl.", "triton.language.")):
            key = text.split(".")[-1]
            if key in TWIN_DTYPE_OF_TL:
                return TWIN_DTYPE_OF_TL[key]
        if isinstance(node, ast.Attribute) and node.attr == "dtype":
            return self(node.value).dtype  # `tl.full(x.shape, 0.0, x.dtype)`
        raise NoTwin(f"dtype {ast.unparse(node)!r}")

    def _full(self, name: str, node: ast.Call) -> Value:
        args = list(node.args)
        kwargs = {k.arg: k.value for k in node.keywords}
        if name == "tl.zeros":
            dtype = self.dtype_of(args[1] if len(args) > 1 else kwargs["dtype"])
            return Value(literal(0, dtype), dtype)
        if name == "tl.zeros_like":
            dtype = self(args[0]).dtype
            return Value(literal(0, dtype), dtype)
        if name == "tl.full_like":
            dtype = self(args[0]).dtype
            return Value(self.out.cast(self(args[1]), dtype), dtype)
        value_node = args[1] if len(args) > 1 else kwargs["value"]
        dtype = self.dtype_of(args[2] if len(args) > 2 else kwargs["dtype"])
        if isinstance(value_node, ast.Call) and dotted(value_node.func) == "float" and value_node.args:
            value = float(ast.literal_eval(value_node.args[0]))
            return Value(literal(value, dtype), dtype)
        value = self(value_node)
        return Value(self.out.cast(value, dtype), dtype)

    def float_arg(self, node: ast.expr, name: str) -> Value:
        x = self(node)
        if x.dtype in ("int", "float"):
            x = Value(self.out.cast(x, "fp32"), "fp32")
        if x.dtype not in ("fp32", "fp64"):
            raise NoTwin(f"{name} on a {x.dtype} value (Triton's libdevice calls are fp32/fp64)")
        return x

    def math(self, name: str, short: str, args: list[ast.expr]) -> Value:
        values = [self.float_arg(a, name) for a in args]
        dtype = "fp64" if any(v.dtype == "fp64" for v in values) else "fp32"
        fast = not name.startswith("libdevice.") and short in FAST and dtype == "fp32"
        function = FAST[short] if fast else ACCURATE[short]
        if dtype == "fp64":
            function = function.lstrip("_").removesuffix("f") if not function.startswith("__fdiv") else "__ddiv_rn"
        return Value(f"{function}({', '.join(self.out.cast(v, dtype) for v in values)})", dtype)

    def address(self, node: ast.expr) -> tuple[str, Value]:
        """`ptr + offset` -> (pointer's C++ name, offset value)."""
        terms = []
        while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and not (isinstance(node.left, ast.Name) and node.left.id in self.out.facts.arg_dtypes):
            terms.append(node.right)
            node = node.left
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            terms.append(node.right)
            node = node.left
        if not (isinstance(node, ast.Name) and node.id in self.out.facts.arg_dtypes and node.id in self.out.facts.params):
            raise NoTwin(f"address {ast.unparse(node)!r} is not a kernel pointer plus an offset")
        var = self.out.lookup(node.id)
        if not terms:
            return var.cname, Value("0", "int")
        offsets = [self(t) for t in reversed(terms)]
        total = offsets[0]
        for extra in offsets[1:]:
            dtype = promote(total.dtype, extra.dtype)
            total = Value(f"({self.out.cast(total, dtype)} + {self.out.cast(extra, dtype)})", dtype)
        return var.cname, total

    def load(self, node: ast.Call) -> Value:
        kwargs = {k.arg: k.value for k in node.keywords}
        pointer_node = node.args[0]
        mask = node.args[1] if len(node.args) > 1 else kwargs.get("mask")
        other = node.args[2] if len(node.args) > 2 else kwargs.get("other")
        pointer, offset = self.address(pointer_node)
        dtype = self.out.facts.arg_dtypes[pointer_of(pointer_node)]
        vector = self.special.get(f"hv_vector_load:{ast.unparse(node)}")
        if vector is not None:
            return vector
        access = f"{pointer}[{offset.code}]"
        if mask is None or (isinstance(mask, ast.Constant) and mask.value is None):
            return Value(access, dtype)
        condition = self(mask)
        fallback = self.out.cast(self(other), dtype) if other is not None else literal(0, dtype)
        return Value(f"({self.out.cast(condition, 'i1')} ? {access} : {fallback})", dtype)


class Statements:
    """Emits Triton statements as C++ statements."""

    def __init__(self, emitter: Emitter, exprs: Expressions, row_level_stores: bool = False, store_guard: tuple[str, ...] = (),
                 barrier: str = "__syncthreads();"):
        self.out = emitter
        self.x = exprs
        self.row_level_stores = row_level_stores  # in a reduction: stores of row values, made by one thread per row
        self.store_guard = store_guard  # conditions every store of these statements waits for (who stores, valid rows)
        self.barrier = barrier  # what tl.debug_barrier is among the threads of one row: the block's, or the warp's

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            self.assign(stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.call(stmt.value)
        elif isinstance(stmt, ast.Pass):
            pass
        else:
            raise NoTwin(f"statement {ast.unparse(stmt).splitlines()[0]!r}")

    def assign(self, stmt: ast.Assign) -> None:
        if len(stmt.targets) != 1:
            raise NoTwin(f"chained assignment {ast.unparse(stmt)!r}")
        target = stmt.targets[0]
        if isinstance(target, ast.Tuple):
            self.assign_tuple(target, stmt.value)
            return
        if not isinstance(target, ast.Name):
            raise NoTwin(f"assignment to {ast.unparse(target)!r}")
        value = self.x(stmt.value)
        self.store_name(target.id, value)

    def store_name(self, name: str, value: Value) -> None:
        existing = self.out.lookup(name)
        if existing is not None and value.code == existing.cname:
            return  # `tmp2 = tmp2[:, None]`
        dtype = "i32" if value.dtype == "int" else "fp32" if value.dtype == "float" else value.dtype
        mutable = name in self.out.mutable
        if existing is not None and mutable:
            if existing.dtype == dtype:
                self.out.emit(f"{existing.cname} = {self.out.cast(value, dtype)};")
                return
            if existing.depth < len(self.out.scopes):
                raise NoTwin(f"{name} changes type from {existing.dtype} to {dtype} inside a loop")
        self.out.declare(name, dtype, self.out.cast(value, dtype), const=not mutable)

    def assign_tuple(self, target: ast.Tuple, value_node: ast.expr) -> None:
        names = [t.id if isinstance(t, ast.Name) else None for t in target.elts]
        if None in names:
            raise NoTwin(f"tuple assignment {ast.unparse(target)!r}")
        if isinstance(value_node, ast.Tuple) and len(value_node.elts) == len(names):
            values = [self.x(v) for v in value_node.elts]
            for name, value in zip(names, values):
                self.store_name(name, value)
            return
        if not isinstance(value_node, ast.Call):
            raise NoTwin(f"tuple assignment from {ast.unparse(value_node)!r}")
        fields = self.combine_call(value_node)
        for name, value in zip(names, fields, strict=True):
            self.store_name(name, value)

    def combine_call(self, node: ast.Call) -> list[Value]:
        """A per-thread combine step of a reduction loop (welford_reduce, online_softmax_combine, *_with_index)."""
        name = dotted(node.func).split(".")[-1]
        args = [self.x(a) for a in node.args]
        if name == "welford_reduce":
            value, mean, m2, weight, first = args
            state = self.temp("welford", f"hv::welford_reduce({self.out.cast(value, 'fp32')}, {mean.code}, {m2.code}, {weight.code}, {self.out.cast(first, 'i1')})", "hv::Welford")
            return [Value(f"{state}.mean", "fp32"), Value(f"{state}.m2", "fp32"), Value(f"{state}.weight", "fp32")]
        if name == "online_softmax_combine":
            lhs_max, lhs_sum, rhs_max, fast = args
            fast_flag = "true" if fast.code in ("True", "true", "1") else "false"
            state = self.temp("softmax", f"hv::online_softmax_combine<{fast_flag}>({lhs_max.code}, {lhs_sum.code}, {self.out.cast(rhs_max, 'fp32')})", "hv::SoftmaxState")
            return [Value(f"{state}.max", "fp32"), Value(f"{state}.sum", "fp32")]
        if name in ("maximum_with_index", "minimum_with_index"):
            a_value, a_index, b_value, b_index = args
            vtype = promote(a_value.dtype, b_value.dtype)
            itype = promote(a_index.dtype, b_index.dtype)
            ctype = f"hv::ValueIndex<{self.out.ctype(vtype)}, {self.out.ctype(itype)}>"
            combine = "hv::ArgMax" if name.startswith("maximum") else "hv::ArgMin"
            state = self.temp("pick", f"{combine}()({ctype}{{{self.out.cast(a_value, vtype)}, {self.out.cast(a_index, itype)}}}, {ctype}{{{self.out.cast(b_value, vtype)}, {self.out.cast(b_index, itype)}}})", ctype)
            return [Value(f"{state}.value", vtype), Value(f"{state}.index", itype)]
        raise NoTwin(f"{dotted(node.func)}() returning several values")

    def temp(self, stem: str, code: str, ctype: str) -> str:
        cname = self.out.fresh(f"hv_{stem}")
        self.out.emit(f"const {ctype} {cname} = {code};")
        self.out.bind(f" {cname}", Var(cname, "", len(self.out.scopes)))  # reserve the name in this scope
        return cname

    def call(self, node: ast.Call) -> None:
        name = dotted(node.func)
        kwargs = {k.arg: k.value for k in node.keywords}
        if name == "tl.store":
            self.store(node)
        elif name in ("tl.atomic_add", "tl.atomic_max", "tl.atomic_min"):
            pointer, offset = self.x.address(node.args[0])
            dtype = self.out.facts.arg_dtypes[pointer_of(node.args[0])]
            value = self.x(node.args[1])
            mask = node.args[2] if len(node.args) > 2 else kwargs.get("mask")
            function = {"tl.atomic_add": "atomicAdd", "tl.atomic_max": "atomicMax", "tl.atomic_min": "atomicMin"}[name]
            if function != "atomicAdd" and dtype in FLOATS:
                raise NoTwin(f"{name} on floats")
            line = f"{function}(&{pointer}[{offset.code}], {self.out.cast(value, dtype)});"
            self.guarded(line, mask)
        elif name == "tl.device_assert":
            self.out.uses.assert_ = True
            self.out.emit(f"assert({self.out.cast(self.x(node.args[0]), 'i1')});")
        elif name == "tl.debug_barrier":
            if self.row_level_stores:
                self.out.emit(self.barrier)
        elif name in ("tl.static_print", "tl.device_print", "print", "tl.static_assert"):
            pass
        else:
            raise NoTwin(f"call {name or ast.unparse(node.func)}() as a statement")

    def store(self, node: ast.Call) -> None:
        kwargs = {k.arg: k.value for k in node.keywords}
        pointer, offset = self.x.address(node.args[0])
        dtype = self.out.facts.arg_dtypes[pointer_of(node.args[0])]
        mask = node.args[2] if len(node.args) > 2 else kwargs.get("mask")
        vector = self.x.special.get(f"hv_vector_store:{ast.unparse(node)}")
        value = self.x(node.args[1])
        if vector is not None:
            self.out.emit(f"{vector.code} = {self.out.cast(value, dtype)};")
            return
        self.guarded(f"{pointer}[{offset.code}] = {self.out.cast(value, dtype)};", mask)

    def guarded(self, line: str, mask: ast.expr | None) -> None:
        conditions = list(self.store_guard)
        if mask is not None and not (isinstance(mask, ast.Constant) and mask.value is None):
            conditions.append(self.out.cast(self.x(mask), "i1"))
        if conditions:
            self.out.emit(f"if ({' && '.join(conditions)}) {line}")
        else:
            self.out.emit(line)

