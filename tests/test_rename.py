"""harvest.rename: one before/after test per naming rule, safety, and proof on every fixture kernel.

The bitwise proof runs Inductor's kernel and the renamed one under TRITON_INTERPRET=1 on the same inputs and configs
(tests/rename_harness.py holds the harness, shared with the property test and the long fuzz run).
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
import rename_harness
from conftest import FIXTURES

from harvest.model import Buffer, ExternCall, FxNode, Graph, Kernel, KernelComment, Launch, LaunchArg, TensorMeta
from harvest.parse import parse_output_code
from harvest.parse.fx_args import parse_fx_args
from harvest.rename import (
    DroppedParam,
    RenameContext,
    build_context,
    kernel_names,
    readable_kernel_name,
    rename_kernel,
    strip_inductor_decorators,
)

CPU_GRAPHS = sorted(FIXTURES.glob("torch-2.13.0+cpu_triton-3.9.0/*/graph_*.py"))
ALL_GRAPHS = sorted(FIXTURES.glob("*/*/graph_*.py"))
LEFTOVER = re.compile(r"\b(tmp\d+|in_ptr\d+|out_ptr\d+|in_out_ptr\d+|xnumel|XBLOCK)\b")


def assert_rewrite(before: str, after: str, context: RenameContext | None = None) -> None:
    result = rename_kernel(textwrap.dedent(before), context)
    assert result.ok, result.warnings
    assert result.code.strip() == textwrap.dedent(after).strip(), result.code


# --- size parameters and dead locals (a lean module) ------------------------------------------------------------------

SIZED = """
@triton.jit
def triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 1000
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    x1 = xindex // 10
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tl.store(out_ptr0 + (x0), tmp0 + 1.0, xmask)
"""


def _sized(launch_value: str) -> RenameContext:
    return RenameContext(param_hints=(("in_ptr0", "a", "arg0_1"), ("out_ptr0", "", "buf0"), ("xnumel", "", launch_value)))


def test_a_bounds_checked_size_becomes_a_real_parameter() -> None:
    """The launch passes the value Inductor compiled in, and the kernel masks with it: the constant line goes, so
    the size a person sets in make_inputs is the size the kernel uses; the unused `x1` goes too."""
    code = rename_kernel(SIZED, _sized("1000")).code
    assert "n_elements = 1000" not in code and "mask = offsets < n_elements" in code
    assert "// 10" not in code


def test_a_size_the_launch_does_not_pass_stays_fixed_and_leaves_the_def() -> None:
    """One size, one edit: a fixed size is no parameter that the body overwrites, but a line that says why."""
    assert_rewrite(SIZED, """
        @triton.jit
        def add_kernel(a_ptr, out_ptr, BLOCK_SIZE : tl.constexpr):
            n_elements = 1000  # fixed: compiled in by Inductor (Inductor's launch passes ks0)
            block_start = tl.program_id(0) * BLOCK_SIZE
            offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
            mask = offsets < n_elements
            a = tl.load(a_ptr + (offsets), mask)
            tl.store(out_ptr + (offsets), a + 1.0, mask)
        """, _sized("ks0"))
    result = rename_kernel(SIZED, _sized("ks0"))
    assert result.dropped_params == (
        DroppedParam("xnumel", "n_elements", 1000, "compiled in by Inductor (Inductor's launch passes ks0)"),)
    # the name table still says what Inductor called it, and params still cover Inductor's whole def, in its order
    assert ("n_elements", "xnumel", "") in result.mapping
    assert result.params == (("in_ptr0", "a_ptr"), ("out_ptr0", "out_ptr"), ("xnumel", "n_elements"),
                             ("XBLOCK", "BLOCK_SIZE"))


def test_an_unmasked_size_stays_fixed_and_says_why() -> None:
    unmasked = SIZED.replace("xmask = xindex < xnumel", "xmask = tl.full([XBLOCK], True, tl.int1)")
    result = rename_kernel(unmasked, _sized("1000"))
    assert "    n_elements = 1000  # fixed: at this size every block is full, so Inductor left out the bounds mask\n" \
        in result.code
    assert "def add_kernel(a_ptr, out_ptr, BLOCK_SIZE : tl.constexpr):" in result.code
    assert [d.param for d in result.dropped_params] == ["xnumel"]


def test_a_real_size_stays_in_the_def_and_records_nothing_dropped() -> None:
    result = rename_kernel(SIZED, _sized("1000"))
    assert "def add_kernel(a_ptr, out_ptr, n_elements, BLOCK_SIZE : tl.constexpr):" in result.code
    assert result.dropped_params == ()


def test_a_size_read_before_the_line_that_fixes_it_is_left_alone() -> None:
    """Then the value passed is used: the parameter stays, and so does Inductor's line (no reason is claimed)."""
    read_first = "    tmp9 = xnumel + 1\n    tl.store(out_ptr0, tmp9)\n    xnumel = 1000\n"
    early = SIZED.replace("    xnumel = 1000\n", read_first)
    result = rename_kernel(early, _sized("ks0"))
    assert result.ok and result.dropped_params == ()
    assert "def add_kernel(a_ptr, out_ptr, n_elements, BLOCK_SIZE : tl.constexpr):" in result.code
    assert "    n_elements = 1000\n" in result.code


def test_a_dropped_last_parameter_leaves_no_comma_behind() -> None:
    """A def with no block parameter after its sizes (no_x_dim): the one before takes the place of the last."""
    last = """
@triton.jit
def triton_per_fused_sum_0(in_ptr0, out_ptr0, xnumel, r0_numel):
    xnumel = 1
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    r0_index = tl.arange(0, R0_BLOCK)[:]
    tmp0 = tl.load(in_ptr0 + (r0_index), None)
    tmp1 = tl.sum(tmp0, 0)
    tl.store(out_ptr0 + (0), tmp1, None)
"""
    assert_rewrite(last, """
        @triton.jit
        def sum_kernel(a_ptr, out_ptr):
            n_rows = 1  # fixed: at this size every block is full, so Inductor left out the bounds mask
            n_cols = 64  # fixed: the whole row is one block (BLOCK_COLS = 64), as Inductor compiled it
            BLOCK_COLS: tl.constexpr = 64
            cols = tl.arange(0, BLOCK_COLS)[:]
            a = tl.load(a_ptr + (cols), None)
            total = tl.sum(a, 0)
            tl.store(out_ptr + (0), total, None)
        """, RenameContext(kernel_name="sum_kernel"))


def test_a_size_that_bounds_a_loop_stays_fixed_and_says_why() -> None:
    """A run-time trip count compiles to other code (on the H200: results 1 ulp off the record), so a looped
    reduction's row length stays compiled in; its row count, only a mask bound, becomes real."""
    looped = """
@triton.jit
def triton_red_fused_sum_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 300
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + 300*x0), r0_mask & xmask, other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp3 = _tmp2 + tmp1
        _tmp2 = tl.where(r0_mask & xmask, tmp3, _tmp2)
    tmp2 = tl.sum(_tmp2, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)
"""
    context = RenameContext(param_hints=(("in_ptr0", "a", "arg0_1"), ("out_ptr0", "", "buf0"), ("xnumel", "", "64"),
                                         ("r0_numel", "", "300")))
    result = rename_kernel(looped, context)
    assert "    n_cols = 300  # fixed: a loop bound, as Inductor compiled it" in result.code
    assert "n_rows = 64" not in result.code and "row_mask = rows < n_rows" in result.code
    assert "def sum_kernel(a_ptr, out_ptr, n_rows, BLOCK_ROWS : tl.constexpr, BLOCK_COLS : tl.constexpr):" in result.code
    assert [(d.param, d.name, d.value) for d in result.dropped_params] == [("r0_numel", "n_cols", 300)]


def test_dead_locals_go_only_when_computing_them_has_no_effect() -> None:
    """An unused load or call with an effect stays; unused pure values (and what only they read) go."""
    kernel = SIZED.replace("    tmp0 =", "    tmp5 = tl.load(in_ptr0 + (x1), xmask)\n    tmp6 = x1 * 2\n    tmp0 =")
    code = rename_kernel(kernel, _sized("1000")).code
    assert code.count("tl.load(") == 2 and "// 10" in code  # the unused load stays, and so does x1 it reads
    assert " * 2" not in code


EXP_ADD = """
@triton.jit
def triton_poi_fused_add_exp_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = libdevice.exp(tmp0)
    tmp2 = tl.full([1], 1.0, tl.float32)
    tmp3 = tmp1 + tmp2
    tl.store(out_ptr0 + (x0), tmp3, xmask)
"""


def _fx_trace(*nodes: tuple[str, str, str]) -> dict[str, str]:
    fragment = tuple(FxNode(name, "call_function", target, parse_fx_args(args)) for name, target, args in nodes)
    result = rename_kernel(EXP_ADD, RenameContext(fragment=fragment))
    return {old: fx for _, old, fx in result.mapping if fx}


def test_a_tmp_is_traced_to_an_fx_node_only_when_op_and_operands_match() -> None:
    exp = ("exp", "aten.exp.default", "%arg0_1")
    assert _fx_trace(exp, ("add", "aten.add.Tensor", "%exp, 1.0")) == {"tmp1": "exp", "tmp3": "add"}
    # through a view (or a cast) the operand still matches
    assert _fx_trace(exp, ("view", "aten.view.default", "%exp, [8]"), ("add", "aten.add.Tensor", "%view, 1.0")) \
        == {"tmp1": "exp", "tmp3": "add"}
    # the only add of the fragment adds something else: the op alone would have said add
    assert _fx_trace(exp, ("add", "aten.add.Tensor", "%arg0_1, 1.0")) == {"tmp1": "exp"}


# --- naming rules, one each -------------------------------------------------------------------------------------------


def test_pointwise_axis_load_store_and_square() -> None:
    assert_rewrite(
        """
        @triton.jit
        def triton_poi_fused_pow_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
            xoffset = tl.program_id(0) * XBLOCK
            xindex = xoffset + tl.arange(0, XBLOCK)[:]
            xmask = xindex < xnumel
            x0 = xindex
            tmp0 = tl.load(in_ptr0 + (x0), xmask)
            tmp1 = tmp0 * tmp0
            tmp2 = tmp1 * tmp1
            tl.store(out_ptr0 + (x0), tmp2, xmask)
        """,
        """
        @triton.jit
        def pow_kernel(a_ptr, out_ptr, n_elements, BLOCK_SIZE : tl.constexpr):
            block_start = tl.program_id(0) * BLOCK_SIZE
            offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
            mask = offsets < n_elements
            a = tl.load(a_ptr + (offsets), mask)
            square = a * a
            square_1 = square * square
            tl.store(out_ptr + (offsets), square_1, mask)
        """,
        RenameContext(kernel_name="pow_kernel"),
    )


def test_coordinates_from_index_expressions_and_bias_role() -> None:
    assert_rewrite(
        """
        @triton.jit
        def triton_poi_fused_add_0(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr):
            xoffset = tl.program_id(0) * XBLOCK
            xindex = xoffset + tl.arange(0, XBLOCK)[:]
            xmask = xindex < xnumel
            x2 = xindex
            x0 = (xindex % 64)
            x1 = xindex // 64
            tmp0 = tl.load(in_out_ptr0 + (x2), xmask)
            tmp1 = tl.load(in_ptr0 + (x0), xmask)
            tmp2 = tmp0 + tmp1
            tl.store(in_out_ptr0 + (x2), tmp2, xmask)
        """,
        """
        @triton.jit
        def add_kernel(inout_ptr, bias_ptr, n_elements, BLOCK_SIZE : tl.constexpr):
            block_start = tl.program_id(0) * BLOCK_SIZE
            offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
            mask = offsets < n_elements
            col = (offsets % 64)
            loaded = tl.load(inout_ptr + (offsets), mask)
            bias = tl.load(bias_ptr + (col), mask)
            add = loaded + bias
            tl.store(inout_ptr + (offsets), add, mask)
        """,
    )


def test_persistent_reduction_rows_cols_mean_var_rstd_and_output_pointers() -> None:
    assert_rewrite(
        """
        @triton.jit
        def triton_per_fused_native_layer_norm_0(in_out_ptr0, in_ptr0, in_ptr1, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):
            xnumel = 32
            r0_numel = 32
            R0_BLOCK: tl.constexpr = 32
            rnumel = r0_numel
            RBLOCK: tl.constexpr = R0_BLOCK
            xoffset = tl.program_id(0) * XBLOCK
            xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
            xmask = xindex < xnumel
            r0_index = tl.arange(0, R0_BLOCK)[None, :]
            r0_offset = 0
            roffset = r0_offset
            rindex = r0_index
            r0_1 = r0_index
            x0 = xindex
            tmp0 = tl.load(in_ptr0 + (r0_1 + 32*x0), xmask, other=0.0)
            tmp18 = tl.load(in_ptr1 + (r0_1), None)
            tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
            tmp3 = tl.where(xmask, tmp1, 0)
            tmp4 = tl.sum(tmp3, 1)[:, None].to(tl.float32)
            tmp5 = tl.full([1, 1], 32.0, tl.float32)
            tmp6 = (tmp4 / tmp5)
            tmp7 = tmp0 - tmp6
            tmp8 = tmp7 * tmp7
            tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
            tmp11 = tl.where(xmask, tmp9, 0)
            tmp12 = tl.sum(tmp11, 1)[:, None].to(tl.float32)
            tmp13 = (tmp12 / tmp5)
            tmp14 = tl.full([1, 1], 1e-05, tl.float32)
            tmp15 = tmp13 + tmp14
            tmp16 = libdevice.rsqrt(tmp15)
            tmp17 = tmp7 * tmp16
            tmp19 = tmp17 * tmp18
            tl.store(in_out_ptr0 + (x0), tmp16, xmask)
            tl.store(out_ptr0 + (r0_1 + 32*x0), tmp19, xmask)
        """,
        """
        @triton.jit
        def layer_norm_fwd_kernel(rstd_ptr, a_ptr, weight_ptr, out_ptr, BLOCK_ROWS : tl.constexpr):
            n_rows = 32  # fixed: compiled in by Inductor
            n_cols = 32  # fixed: the whole row is one block (BLOCK_COLS = 32), as Inductor compiled it
            BLOCK_COLS: tl.constexpr = 32
            row_start = tl.program_id(0) * BLOCK_ROWS
            rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
            row_mask = rows < n_rows
            cols = tl.arange(0, BLOCK_COLS)[None, :]
            a = tl.load(a_ptr + (cols + 32*rows), row_mask, other=0.0)
            weight = tl.load(weight_ptr + (cols), None)
            broadcast = tl.broadcast_to(a, [BLOCK_ROWS, BLOCK_COLS])
            masked = tl.where(row_mask, broadcast, 0)
            total = tl.sum(masked, 1)[:, None].to(tl.float32)
            const = tl.full([1, 1], 32.0, tl.float32)
            mean = (total / const)
            centered = a - mean
            square = centered * centered
            broadcast_1 = tl.broadcast_to(square, [BLOCK_ROWS, BLOCK_COLS])
            masked_1 = tl.where(row_mask, broadcast_1, 0)
            total_1 = tl.sum(masked_1, 1)[:, None].to(tl.float32)
            var = (total_1 / const)
            const_1 = tl.full([1, 1], 1e-05, tl.float32)
            var_eps = var + const_1
            rstd = libdevice.rsqrt(var_eps)
            mul = centered * rstd
            mul_1 = mul * weight
            tl.store(rstd_ptr + (rows), rstd, row_mask)
            tl.store(out_ptr + (cols + 32*rows), mul_1, row_mask)
        """,
    )


def test_looped_reduction_accumulators_size_symbols_and_scalars() -> None:
    assert_rewrite(
        """
        @triton.jit
        def triton_red_fused_amax_0(in_ptr0, in_ptr1, out_ptr0, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
            rnumel = r0_numel
            RBLOCK: tl.constexpr = R0_BLOCK
            xoffset = tl.program_id(0) * XBLOCK
            xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
            xmask = xindex < xnumel
            r0_base = tl.arange(0, R0_BLOCK)[None, :]
            rbase = r0_base
            x0 = xindex
            tmp1 = in_ptr1
            _tmp4 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
            for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
                r0_index = r0_offset + r0_base
                r0_mask = r0_index < r0_numel
                roffset = r0_offset
                rindex = r0_index
                r0_1 = r0_index
                tmp0 = tl.load(in_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, other=0.0)
                tmp2 = tmp0 * tmp1
                tmp3 = tl.broadcast_to(tmp2, [XBLOCK, R0_BLOCK])
                tmp5 = triton_helpers.maximum(_tmp4, tmp3)
                _tmp4 = tl.where(r0_mask & xmask, tmp5, _tmp4)
            tmp4 = triton_helpers.max2(_tmp4, 1)[:, None]
            tl.store(out_ptr0 + (x0), tmp4, xmask)
        """,
        """
        @triton.jit
        def amax_kernel(a_ptr, scalar, out_ptr, size_0, n_rows, n_cols, BLOCK_ROWS : tl.constexpr, BLOCK_COLS : tl.constexpr):
            row_start = tl.program_id(0) * BLOCK_ROWS
            rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
            row_mask = rows < n_rows
            col_base = tl.arange(0, BLOCK_COLS)[None, :]
            scalar_val = scalar
            amax_acc = tl.full([BLOCK_ROWS, BLOCK_COLS], float("-inf"), tl.float32)
            for col_start in tl.range(0, n_cols, BLOCK_COLS):
                cols = col_start + col_base
                col_mask = cols < n_cols
                a = tl.load(a_ptr + (cols + size_0*rows), col_mask & row_mask, other=0.0)
                mul = a * scalar_val
                broadcast = tl.broadcast_to(mul, [BLOCK_ROWS, BLOCK_COLS])
                maximum = triton_helpers.maximum(amax_acc, broadcast)
                amax_acc = tl.where(col_mask & row_mask, maximum, amax_acc)
            amax = triton_helpers.max2(amax_acc, 1)[:, None]
            tl.store(out_ptr + (rows), amax, row_mask)
        """,
    )


def test_ops_casts_constants_where_and_builtin_names_avoided() -> None:
    assert_rewrite(
        """
        @triton.jit
        def triton_poi_fused_abs_where_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
            xoffset = tl.program_id(0) * XBLOCK
            xindex = xoffset + tl.arange(0, XBLOCK)[:]
            xmask = xindex < xnumel
            x0 = xindex
            tmp0 = tl.load(in_ptr0 + (x0), xmask).to(tl.float32)
            tmp1 = tl_math.abs(tmp0)
            tmp2 = tl.full([1], 0.0, tl.float32)
            tmp3 = tmp0 > tmp2
            tmp4 = tl.where(tmp3, tmp1, tmp2)
            tmp5 = libdevice.pow(tmp4, tmp1)
            tmp6 = tmp5.to(tl.float16)
            tl.store(out_ptr0 + (x0), tmp6, xmask)
        """,
        """
        @triton.jit
        def abs_where_kernel(a_ptr, out_ptr, n_elements, BLOCK_SIZE : tl.constexpr):
            block_start = tl.program_id(0) * BLOCK_SIZE
            offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
            mask = offsets < n_elements
            a = tl.load(a_ptr + (offsets), mask).to(tl.float32)
            absolute = tl.math.abs(a)
            zero = tl.full([1], 0.0, tl.float32)
            gt = a > zero
            where = tl.where(gt, absolute, zero)
            power = libdevice.pow(where, absolute)
            as_f16 = power.to(tl.float16)
            tl.store(out_ptr + (offsets), as_f16, mask)
        """,
    )


def test_launch_hints_name_pointers_and_fx_nodes_trace_tmps() -> None:
    source = textwrap.dedent(
        """
        @triton.jit
        def triton_poi_fused_gelu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
            xoffset = tl.program_id(0) * XBLOCK
            xindex = xoffset + tl.arange(0, XBLOCK)[:]
            xmask = xindex < xnumel
            x0 = xindex
            tmp0 = tl.load(in_ptr0 + (x0), xmask)
            tmp1 = libdevice.erf(tmp0)
            tl.store(out_ptr0 + (x0), tmp1, xmask)
        """
    )
    meta = TensorMeta((4,), (1,), "float32")
    graph = Graph(
        name="g0", role="forward", kernels=(), launches=(), inputs=("primals_1",), outputs=("buf1",),
        buffers={"buf0": Buffer("buf0", meta, "empty"), "buf2": Buffer("buf2", meta, "view", base="buf0"),
                 "buf1": Buffer("buf1", meta, "empty"), "primals_1": Buffer("primals_1", meta, "input", input_index=0)},
        externs=(ExternCall("extern_kernels.addmm", ("primals_1",), "buf0", 0),),
    )
    launch = Launch("triton_poi_fused_gelu_0", (LaunchArg("in_ptr0", "buf2", "buf2"), LaunchArg("out_ptr0", "buf1", "buf1"),
                                                LaunchArg("xnumel", "4", None, 4)), 1)
    fragment = parse_output_code(CPU_GRAPHS[-1].read_text()).kernels[0].comment.fragment  # any fragment without erf
    kernel = Kernel("triton_poi_fused_gelu_0", source, "pointwise", "cpu", comment=KernelComment(fragment=fragment))
    result = rename_kernel(source, build_context(kernel, launch, graph, "gelu_kernel"))
    assert result.ok
    assert result.params == (("in_ptr0", "addmm_ptr"), ("out_ptr0", "out_ptr"), ("xnumel", "n_elements"),
                             ("XBLOCK", "BLOCK_SIZE"))
    assert ("addmm_ptr", "in_ptr0", "buf2") in result.mapping  # the view of buf0 that extern addmm wrote
    assert ("addmm", "tmp0", "") in result.mapping
    assert result.kernel_name == "gelu_kernel"


def test_fx_node_column_filled_when_one_node_matches() -> None:
    graph = parse_output_code((FIXTURES / "torch-2.13.0+cpu_triton-3.9.0/small_model/graph_000.py").read_text())
    kernel = graph.kernels[0]
    result = rename_kernel(kernel.source, build_context(kernel, graph.launches_of(kernel.name)[0], graph))
    assert ("rstd", "tmp16", "rsqrt") in result.mapping
    assert ("a_ptr", "in_ptr0", "primals_3") in result.mapping


# --- kernel names -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inductor", "aten", "source_nodes", "expected"),
    [
        ("triton_per_fused_native_layer_norm_0", ("aten.native_layer_norm",), ("h",), "layer_norm_fwd_kernel"),
        ("triton_per_fused_native_layer_norm_0", (), (), "layer_norm_fwd_kernel"),
        ("triton_poi_fused_gelu_view_1", ("aten.view", "aten.gelu"), ("h_1", "h_2"), "gelu_kernel"),
        ("triton_per_fused__softmax_amax_mul_sub_2", ("aten.mul", "aten.amax", "aten.sub", "aten._softmax"), (),
         "softmax_kernel"),
        ("triton_poi_fused_pow_0", ("aten.pow",), ("square", "square_1"), "square_square_kernel"),
        ("triton_red_fused_add_native_layer_norm_native_layer_norm_backward_transpose_view_7", (), (),
         "layer_norm_bwd_kernel"),
        ("triton_poi_fused_add_3", ("aten.add",), ("add",), "add_kernel"),
        ("triton_per_fused_gelu_gelu_backward_sum_view_4", ("aten.view", "aten.gelu", "aten.gelu_backward", "aten.sum"),
         (), "gelu_bwd_sum_kernel"),
    ],
)
def test_readable_kernel_name(inductor: str, aten: tuple[str, ...], source_nodes: tuple[str, ...], expected: str) -> None:
    assert readable_kernel_name(inductor, aten, source_nodes) == expected


def test_kernel_names_unique_in_graph() -> None:
    graph = parse_output_code((FIXTURES / "torch-2.11.0+cu130_triton-3.6.0/small_model/graph_001.py").read_text())
    names = kernel_names(graph)
    assert len(set(names.values())) == len(graph.kernels)
    assert names["triton_per_fused_add_sum_view_3"] == "add_sum_kernel_1"


# --- safety -----------------------------------------------------------------------------------------------------------


def test_names_never_collide_with_kept_names_keywords_or_builtins() -> None:
    result = rename_kernel(textwrap.dedent(
        """
        @triton.jit
        def triton_poi_fused_abs_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
            xoffset = tl.program_id(0) * XBLOCK
            xindex = xoffset + tl.arange(0, XBLOCK)[:]
            mask = xindex < 3
            a = 1
            tmp0 = tl.load(in_ptr0 + (xindex), mask)
            tmp1 = tl.sum(tmp0, 0)
            tmp2 = triton_helpers.max2(tmp1, 0)
            tl.store(out_ptr0 + (xindex), tmp2 + a, mask)
        """
    ))
    assert result.ok
    new = dict((old, new) for new, old, _ in result.mapping)
    assert new["tmp0"] == "a_1" and new["tmp1"] == "total" and new["tmp2"] == "amax"
    assert new["xindex"] == "offsets"
    assert "mask" not in new  # a name Inductor did not invent stays, and nothing else takes it


def test_failure_keeps_inductor_names_and_never_raises() -> None:
    bad = "@triton.jit\ndef triton_poi_fused_0(in_ptr0, *args):\n    tmp0 = tl.load(in_ptr0)\n"
    result = rename_kernel(bad)
    assert not result.ok and result.warnings
    assert "tmp0" in result.code and "in_ptr0" in result.code
    garbage = rename_kernel("def (:")
    assert not garbage.ok and garbage.code == "def (:"


def test_strip_inductor_decorators_standalone_imports() -> None:
    source = parse_output_code(CPU_GRAPHS[0].read_text()).kernels[0].source  # dynamic shapes: tl_math, helpers
    stripped = strip_inductor_decorators(source)
    assert "triton_heuristics" not in stripped and "set_driver_to_cpu" not in stripped and "tl_math" not in stripped
    assert "from triton.language.extra import libdevice" in stripped
    assert "from torch._inductor.runtime import triton_helpers\n" in stripped  # maximum/max2/any have no equal in tl
    assert stripped.count("@") == 1 and "@triton.jit\ndef triton_red_fused" in stripped
    assert "tmp0" in stripped  # names untouched
    compile(stripped, "<stripped>", "exec")


def test_promote_to_tensor_is_inlined_as_its_definition() -> None:
    stripped = strip_inductor_decorators(textwrap.dedent(
        """
        from torch._inductor.runtime import triton_helpers, triton_heuristics
        @triton.jit
        def k(x):
            y = triton_helpers.promote_to_tensor(x)
        """
    ))
    assert "y = (x + tl.zeros((1,), tl.int1))" in stripped and "triton_helpers" not in stripped


def test_tamper_is_caught(tmp_path: Path) -> None:
    """The bitwise harness must fail when the renamed kernel computes something else."""
    graph = parse_output_code((FIXTURES / "torch-2.13.0+cpu_triton-3.9.0/square_square/graph_000.py").read_text())
    kernel = graph.kernels[0]
    check = rename_harness.compare_kernel(kernel, graph.launches_of(kernel.name)[0], graph, tmp_path,
                                       tamper=lambda code: code.replace("square * square", "square * a"))
    assert not check.ok and "differs" in check.message


# --- every fixture kernel ---------------------------------------------------------------------------------------------


def _kernels(paths: list[Path]) -> list[tuple[str, Graph, Kernel]]:
    out = []
    for path in paths:
        graph = parse_output_code(path.read_text())
        out += [(f"{path.parent.parent.name[:12]}/{path.parent.name}/{path.stem}/{k.name}", graph, k)
                for k in graph.kernels]
    return out


ALL_KERNELS = _kernels(ALL_GRAPHS)
CPU_KERNELS = _kernels(CPU_GRAPHS)


@pytest.mark.parametrize(("graph", "kernel"), [(g, k) for _, g, k in ALL_KERNELS], ids=[i for i, _, _ in ALL_KERNELS])
def test_round_trip_every_fixture_kernel(graph: Graph, kernel: Kernel) -> None:
    launches = graph.launches_of(kernel.name)
    result = rename_kernel(kernel.source, build_context(kernel, launches[0] if launches else None, graph,
                                                         kernel_names(graph)[kernel.name]))
    assert result.ok, result.warnings
    assert not result.warnings
    compile(result.code, kernel.name, "exec")
    assert not LEFTOVER.findall(result.code)
    assert "triton_heuristics" not in result.code and "tl_math" not in result.code
    # structure kept: the same statements that compute and store, the same parameter count, every rename traced
    for call in ("tl.load(", "tl.store(", "tl.sum(", "libdevice.", "tl.where("):
        assert result.code.count(call) == kernel.source.count(call), call
    assert [old for old, _ in result.params] == list(kernel.signature)
    traced = {old for _, old, _ in result.mapping}
    assert {old for old, new in result.params if old != new} <= traced
    assert all(re.search(rf"\b{re.escape(new)}\b", result.code) for new, _, _ in result.mapping)
    # one size, one edit: no parameter of the renamed def is assigned in its body; a dropped one was Inductor's
    # param, is one line of the body now, and the name table still maps it
    tree = ast.parse(result.code)
    (jit,) = [d for d in tree.body if isinstance(d, ast.FunctionDef) and d.name == result.kernel_name]
    params = [a.arg for a in jit.args.args]
    assigned = {t.id for n in ast.walk(jit) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    assert not assigned & set(params), sorted(assigned & set(params))
    renamed = dict(result.params)
    assert params == [renamed[p] for p in kernel.signature if p not in {d.param for d in result.dropped_params}]
    for dropped in result.dropped_params:
        assert dropped.param in kernel.signature and dropped.name == renamed[dropped.param]
        assert (dropped.name, dropped.param) in {(new, old) for new, old, _ in result.mapping}
        assert f"    {dropped.name} = {dropped.value}  # fixed: {dropped.reason}\n" in result.code


@pytest.mark.parametrize(("graph", "kernel"), [(g, k) for _, g, k in CPU_KERNELS], ids=[i for i, _, _ in CPU_KERNELS])
def test_renamed_kernel_is_bitwise_identical(graph: Graph, kernel: Kernel, tmp_path: Path) -> None:
    launch = graph.launches_of(kernel.name)[0]
    check = rename_harness.compare_kernel(kernel, launch, graph, tmp_path, kernel_names(graph)[kernel.name])
    assert check.ok, check.message
