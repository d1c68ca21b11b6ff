"""harvest.module.file, the one reader of kernel modules (docs/module-format.md), on hand-written modules in the lean
format; the predicates and dtype tables it shares; and the readers built on it (ptx, twin, sweep, bench) on the same
texts. Nothing here imports or runs a module."""

from __future__ import annotations

import ast
import re
import textwrap

import libcst as cst
import pytest
from conftest import ROOT

from harvest.bench.command import kernel_function_name
from harvest.bench.sweep import block_names, sweep_configs, sweep_space
from harvest.dtypes import (
    ITEMSIZE,
    POINTER_DTYPES,
    TL_DTYPES,
    TRITON_DTYPES,
    TRITON_POINTEE,
    torch_dtype_name,
    triton_pointer_dtype,
)
from harvest.errors import ParseError
from harvest.model import Kernel
from harvest.module.file import ModuleFileError, TensorArg, read_kernel_region, read_module_file
from harvest.parse import parse_output_code
from harvest.ptx import compile_args, read_kernel_module
from harvest.syntax import is_constexpr_annotation, is_constexpr_annotation_cst, is_jit_decorator_cst, is_jit_def
from harvest.twin import NoTwin, read_module, translate
from harvest.twin.facts import CTYPES, TWIN_DTYPE_OF_TL, TWIN_DTYPE_OF_TORCH

SHA = "b3c7deab0d1796101e6fc39b6b4d762fd88491ff2b6556acb96add6792466ed7"

# The square_square module of docs/module-format.md, its kernel as harvest extracts it
SQUARE = textwrap.dedent(f'''\
    """square_square_kernel: pointwise kernel fusing aten.pow

    From examples/square_square.py (graph g0_inference), Inductor's triton_poi_fused_pow_0.
    """

    import os
    import sys

    import torch
    import triton
    import triton.language as tl

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from harness import Tensor, main  # noqa: E402  (the extraction's harness.py, beside the graphs)


    # >>> kernel (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
    @triton.jit
    def square_square_kernel(a_ptr, out_ptr, n_elements, BLOCK_SIZE : tl.constexpr):
        block_start = tl.program_id(0) * BLOCK_SIZE
        offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
        mask = offsets < n_elements
        a = tl.load(a_ptr + (offsets), mask)
        square = a * a
        square_1 = square * square
        tl.store(out_ptr + (offsets), square_1, mask)
    # <<< kernel


    CONFIG = {{"BLOCK_SIZE": 1024, "num_warps": 4, "num_stages": 1}}  # recorded in the run


    def launch(a_ptr, out_ptr, n_elements, config=CONFIG):
        """Launch square_square_kernel on its arguments (outputs are written in place)."""
        grid = (triton.cdiv(n_elements, config["BLOCK_SIZE"]),)
        square_square_kernel[grid](a_ptr, out_ptr, n_elements, **config)


    # The launch's arguments, as recorded in the run
    ARGUMENTS = {{
        "a_ptr": Tensor((100000000,), (1,), torch.float32),
        "out_ptr": Tensor((100000000,), (1,), torch.float32, zeros=True),
        "n_elements": 100000000,
    }}
    OUTPUTS = ["out_ptr"]  # what the kernel writes: --check compares each


    def reference(a_ptr):
        """The eager ops of the kernel's FX graph."""
        return {{"out_ptr": torch.ops.aten.pow.Tensor_Scalar(a_ptr, 4)}}


    RECORD = "../raw/g0_inference/records/triton_poi_fused_pow_0.pt"
    RECORD_DEVICE = "cuda:NVIDIA H200"
    KERNEL_SHA256 = "{SHA}"
    EXACT_POSSIBLE = True
    UNCHECKED = {{}}

    if __name__ == "__main__":
        sys.exit(main(globals()))

    # Names (this module <- Inductor's output_code.py  [FX node]): a_ptr <- in_ptr0 [arg0_1], out_ptr <- out_ptr0 [buf0]
''')

REGION = SQUARE[SQUARE.index("@triton.jit") : SQUARE.index("# <<< kernel")]


def edited(old: str, new: str, text: str = SQUARE) -> str:
    """SQUARE with one exact piece replaced (the piece must be there)."""
    assert old in text, old
    return text.replace(old, new)


def line_of(text: str, piece: str) -> int:
    return text[: text.index(piece)].count("\n") + 1


# ---------------------------------------------------------------------------------------------------------- reading


def test_reads_every_fact_of_the_module():
    module = read_module_file(SQUARE, "g0_inference/square_square_kernel.py")
    assert module.name == "square_square_kernel" and module.kernel.name == "square_square_kernel" and module.helpers == ()
    assert module.region == REGION
    assert SQUARE.splitlines()[module.region_first_line - 1] == "@triton.jit"
    assert module.padded_region.splitlines()[module.kernel.lineno - 1].startswith("def square_square_kernel(")
    assert module.params == ("a_ptr", "out_ptr", "n_elements", "BLOCK_SIZE")
    assert module.constexprs == ("BLOCK_SIZE",) and module.runtime_params == ("a_ptr", "out_ptr", "n_elements")
    assert module.do_not_specialize == ()
    assert list(module.config.items()) == [("BLOCK_SIZE", 1024), ("num_warps", 4), ("num_stages", 1)]
    assert module.constexpr_config == {"BLOCK_SIZE": 1024} and module.launch_options == {"num_warps": 4, "num_stages": 1}
    assert dict(module.arguments) == {
        "a_ptr": TensorArg((100000000,), (1,), "float32"),
        "out_ptr": TensorArg((100000000,), (1,), "float32", zeros=True),
        "n_elements": 100000000,
    }
    assert list(module.arguments) == ["a_ptr", "out_ptr", "n_elements"]
    assert list(module.tensors) == ["a_ptr", "out_ptr"]
    assert module.outputs == ("out_ptr",)
    assert module.record == "../raw/g0_inference/records/triton_poi_fused_pow_0.pt"
    assert module.kernel_sha256 == SHA
    assert module.grid_text == "(triton.cdiv(n_elements, config['BLOCK_SIZE']),)"
    assert [ast.unparse(axis) for axis in module.grid] == ["triton.cdiv(n_elements, config['BLOCK_SIZE'])"]


def test_the_read_values_cannot_be_changed():
    module = read_module_file(SQUARE, "k.py")
    with pytest.raises(TypeError):
        module.config["BLOCK_SIZE"] = 8  # type: ignore[index]
    with pytest.raises(TypeError):
        module.arguments["n_elements"] = 8  # type: ignore[index]


def test_helpers_precede_the_kernel_and_do_not_specialize_names_or_indexes_parameters():
    region = textwrap.dedent("""\
        @triton.jit
        def _triton_helper_fn_add0(arg0_0, arg1_0):
            return arg0_0 + arg1_0

        # Not specialized on their values, as Inductor compiled it:
        @triton.jit(do_not_specialize=['n_rows', 3])
        def cumsum_kernel(a_ptr, out_ptr, n_rows, n_cols, BLOCK_ROWS : tl.constexpr, BLOCK_COLS : tl.constexpr):
            rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
            cols = tl.arange(0, BLOCK_COLS)[None, :]
            a = tl.load(a_ptr + (cols + n_cols * rows), (rows < n_rows) & (cols < n_cols), other=0.0)
            total = tl.associative_scan(a, 1, _triton_helper_fn_add0)
            tl.store(out_ptr + (cols + n_cols * rows), total, (rows < n_rows) & (cols < n_cols))
    """)
    text = SQUARE[: SQUARE.index("@triton.jit")] + region + SQUARE[SQUARE.index("# <<< kernel") :]
    text = edited('"BLOCK_SIZE": 1024,', '"BLOCK_ROWS": 2, "BLOCK_COLS": 64,', text)
    text = edited("def launch(a_ptr, out_ptr, n_elements, config=CONFIG):", "def launch(a_ptr, out_ptr, n_rows, n_cols, config=CONFIG):", text)
    text = edited('grid = (triton.cdiv(n_elements, config["BLOCK_SIZE"]),)', 'grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]), 1, 1)', text)
    text = edited('    "a_ptr": Tensor((100000000,), (1,), torch.float32),\n    "out_ptr": Tensor((100000000,), (1,), torch.float32, zeros=True),\n    "n_elements": 100000000,',
                  '    "a_ptr": Tensor((32, 64), (64, 1), torch.float32),\n    "out_ptr": Tensor((32, 64), (64, 1), torch.float32, zeros=True),\n    "n_rows": 32,\n    "n_cols": 64,', text)  # fmt: skip
    module = read_module_file(text, "g1/cumsum_kernel.py")
    assert module.name == "cumsum_kernel" and [h.name for h in module.helpers] == ["_triton_helper_fn_add0"]
    assert module.region.startswith("@triton.jit\ndef _triton_helper_fn_add0(")
    assert module.do_not_specialize == ("n_rows", "n_cols")
    assert module.constexprs == ("BLOCK_ROWS", "BLOCK_COLS")
    assert module.grid_text == "(triton.cdiv(n_rows, config['BLOCK_ROWS']), 1, 1)"
    assert text.splitlines()[module.kernel.lineno - 1].startswith("def cumsum_kernel(")
    # harvest ptx accepts the helper (its body is checked too) and sees what both bodies use
    ptx = read_kernel_module(text, "g1/cumsum_kernel.py")
    assert ("tl", "associative_scan") in ptx.references
    assert compile_args(ptx).signature["n_rows"] == "i32"  # not specialized: no divisibility, no constant
    # the twin takes a scan's combine helper (a C++ lambda), and refuses a kernel that calls a helper itself
    assert list(read_module(text).combine_helpers) == ["_triton_helper_fn_add0"]
    called = edited("    tl.store(out_ptr + (cols", "    total = _triton_helper_fn_add0(total, a)\n    tl.store(out_ptr + (cols", text)
    with pytest.raises(NoTwin, match="calls the @triton.jit helper.*_triton_helper_fn_add0"):
        read_module(called)
    # sweep pairs the block sizes with Inductor's kernel def, not with the helper that comes first in its source
    inductor = Kernel("triton_red_fused_cumsum_0", textwrap.dedent("""\
        @triton.jit
        def _triton_helper_fn_add0(arg0_0, arg1_0):
            return arg0_0 + arg1_0

        @triton_heuristics.reduction(size_hints={'x': 32, 'r0_': 64})
        @triton.jit
        def triton_red_fused_cumsum_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
            pass
    """), "reduction", "cuda", size_hints={"x": 32, "r0_": 64})
    assert block_names(inductor, module) == {"XBLOCK": "BLOCK_ROWS", "R0_BLOCK": "BLOCK_COLS"}


def test_tensor_fields_aliases_and_scalars():
    text = edited('''    "a_ptr": Tensor((100000000,), (1,), torch.float32),
    "out_ptr": Tensor((100000000,), (1,), torch.float32, zeros=True),
    "n_elements": 100000000,''', '''    "a_ptr": Tensor((10, 10), (10, 1), torch.half, high=7),
    "out_ptr": Tensor(shape=(4,), stride=(2,), dtype=torch.bfloat16, offset=8, base="a_ptr", zeros=False, high=None),
    "n_elements": -3,''')
    text = edited('CONFIG = {"BLOCK_SIZE": 1024,', 'CONFIG = {"BLOCK_SIZE": 1024, "maxnreg": None,', text)
    module = read_module_file(text, "k.py")
    assert module.arguments["a_ptr"] == TensorArg((10, 10), (10, 1), "float16", 0, None, False, 7)
    assert module.arguments["out_ptr"] == TensorArg((4,), (2,), "bfloat16", 8, "a_ptr", False, None)
    assert module.arguments["n_elements"] == -3
    assert module.launch_options == {"maxnreg": None, "num_warps": 4, "num_stages": 1}


@pytest.mark.parametrize("spelling, value", [("True", True), ("0.5", 0.5), ("-0.5", -0.5), ('float("-inf")', float("-inf")), ("2**40", None)])
def test_scalar_arguments_are_literals(spelling, value):
    text = edited('"n_elements": 100000000,', f'"n_elements": {spelling},')
    if value is None:
        with pytest.raises(ModuleFileError, match=r"ARGUMENTS\['n_elements'\] is neither a Tensor"):
            read_module_file(text, "k.py")
    else:
        assert read_module_file(text, "k.py").arguments["n_elements"] == value


def test_a_marker_inside_a_string_is_not_a_marker():
    text = edited('"""square_square_kernel: pointwise kernel fusing aten.pow\n', '"""square_square_kernel: pointwise kernel fusing aten.pow\n# >>> kernel\n')
    assert read_module_file(text, "k.py").region == REGION


def test_reading_runs_nothing(tmp_path):
    marker = tmp_path / "MARKER"
    call = f"open({str(marker)!r}, 'w')"
    text = edited("import os\n", f"import os\n{call}\n")
    text = edited('"num_stages": 1}', '"num_stages": 1}\nCALLED = ' + call, text)
    read_module_file(text, "k.py")
    read_kernel_module(text, "k.py")
    assert not marker.exists()


# ----------------------------------------------------------------------------------------------------------- errors

# name -> (edit of SQUARE, the piece on the line the error names (None: no line), what the message says)
ERRORS = {
    "not python": (("    square = a * a", "    square = a *"), "    square = a *", "not valid Python"),
    "no region": (("# >>> kernel (edit freely", "# kernel (edit freely"), None, "no '# >>> kernel' line"),
    "no end marker": (("# <<< kernel\n", "\n"), "# >>> kernel", "no '# <<< kernel' line"),
    "two regions": (("CONFIG = {", "# >>> kernel\n# <<< kernel\nCONFIG = {"), "# >>> kernel\n# <<< kernel\nCONFIG", "a second kernel marker"),
    "two kernels": (("\n\nCONFIG = {", "\n\n@triton.jit\ndef other_kernel(x_ptr):\n    pass\n\n\nCONFIG = {"), "def other_kernel", "@triton.jit def other_kernel is outside the kernel region"),
    "code beside the kernel": (("@triton.jit\ndef square", "import os\n@triton.jit\ndef square"), "import os\n@triton.jit", "the kernel region holds `import os`"),
    "a plain def in the region": (("@triton.jit\ndef square", "def helper(x):\n    return x\n@triton.jit\ndef square"), "def helper", "def helper, which is not decorated @triton.jit"),
    "empty region": ((REGION, ""), "# <<< kernel", "the kernel region holds no @triton.jit def"),
    "kernel under another decorator": (("@triton.jit\ndef", "@triton.jit\n@triton.autotune(configs=[], key=[])\ndef"), "def square_square_kernel", "decorators besides @triton.jit (@triton.autotune(configs=[], key=[]))"),
    "non-literal jit option": (("@triton.jit\n", "@triton.jit(debug=os.environ)\n"), "@triton.jit(debug", "option debug of square_square_kernel is not a literal"),
    "do_not_specialize names no parameter": (("@triton.jit\n", "@triton.jit(do_not_specialize=['n_cols'])\n"), "@triton.jit(do", "do_not_specialize names 'n_cols', which is not a parameter"),
    "a default value": (("BLOCK_SIZE : tl.constexpr)", "BLOCK_SIZE : tl.constexpr = 128)"), "def square_square_kernel", "gives a parameter a default"),
    "a non-literal CONFIG": (('CONFIG = {"BLOCK_SIZE": 1024, "num_warps": 4, "num_stages": 1}', "CONFIG = dict(BLOCK_SIZE=1024)"), "CONFIG = dict", "CONFIG is not a literal dict (dict(BLOCK_SIZE=1024))"),
    "a computed CONFIG value": (('"BLOCK_SIZE": 1024', '"BLOCK_SIZE": 2 ** 10'), "CONFIG = {", "CONFIG['BLOCK_SIZE'] is not a number or a bool literal (2 ** 10)"),
    "CONFIG twice": (("\n\ndef launch(", "\nCONFIG = {}\n\ndef launch("), "CONFIG = {}", "CONFIG is assigned a second time (first at line"),
    "no CONFIG": (('CONFIG = {"BLOCK_SIZE"', 'SETTINGS = {"BLOCK_SIZE"'), None, "no CONFIG = ..."),
    "an unknown dtype": (('(1,), torch.float32),', "(1,), torch.complex64),"), '"a_ptr"', "ARGUMENTS['a_ptr'] has dtype torch.complex64, which no Triton pointer points to"),
    "a dtype that is not torch's": (('(1,), torch.float32),', '(1,), "float32"),'), '"a_ptr"', "has dtype 'float32', which no Triton pointer"),
    "a call other than Tensor": (('"a_ptr": Tensor((100000000,), (1,), torch.float32)', '"a_ptr": View(0, (100000000,), (1,), 0, torch.float32)'), '"a_ptr"', "ARGUMENTS['a_ptr'] calls View(...); a tensor argument is Tensor(shape, stride, dtype, ...)"),
    "a Tensor field that does not exist": (("torch.float32, zeros=True)", "torch.float32, fill=0)"), '"out_ptr"', "Tensor has no field fill"),
    "a Tensor without its dtype": (('Tensor((100000000,), (1,), torch.float32),', 'Tensor((100000000,), (1,)),'), '"a_ptr"', "Tensor(...) has no dtype"),
    "a field given twice": (("torch.float32, zeros=True)", "torch.float32, dtype=torch.float32)"), '"out_ptr"', "Tensor's dtype is given twice"),
    "sizes and strides that disagree": (('Tensor((100000000,), (1,), torch.float32),', 'Tensor((100000000,), (1, 1), torch.float32),'), '"a_ptr"', "has 1 sizes but 2 strides"),
    "a size that is not an integer": (('Tensor((100000000,), (1,), torch.float32),', 'Tensor((n,), (1,), torch.float32),'), '"a_ptr"', "ARGUMENTS['a_ptr']'s shape is not an integer >= 0 (n)"),
    "a negative offset": (("torch.float32, zeros=True)", "torch.float32, offset=-4)"), '"out_ptr"', "offset is not an integer >= 0 (-4)"),
    "a base after the tensor": (('Tensor((100000000,), (1,), torch.float32),', 'Tensor((100000000,), (1,), torch.float32, base="out_ptr"),'), '"a_ptr"', "base 'out_ptr' is not a Tensor argument before it"),
    "zeros that is not a bool": (("zeros=True", "zeros=1"), '"out_ptr"', "zeros is not True or False"),
    "an argument the kernel does not take": (('"n_elements": 100000000,', '"n_elements": 100000000,\n    "extra": 1,'), '"extra"', "ARGUMENTS['extra'] is not a parameter of square_square_kernel"),
    "a parameter ARGUMENTS lacks": (('    "n_elements": 100000000,\n', ""), "ARGUMENTS = {", "ARGUMENTS has no entry for square_square_kernel's parameter(s) n_elements"),
    "a constexpr without a value": (('"BLOCK_SIZE": 1024, ', ""), "CONFIG = {", "no value for constexpr parameter(s) BLOCK_SIZE"),
    "a value given twice": (('"BLOCK_SIZE": 1024,', '"BLOCK_SIZE": 1024, "n_elements": 8,'), "CONFIG = {", "n_elements is in both CONFIG and ARGUMENTS"),
    "OUTPUTS naming a scalar": (('OUTPUTS = ["out_ptr"]', 'OUTPUTS = ["n_elements"]'), "OUTPUTS =", "OUTPUTS names 'n_elements', which is not a Tensor of ARGUMENTS"),
    "a computed RECORD": (('RECORD = "../raw', 'RECORD = os.path.join("..") + "'), "RECORD = ", "RECORD is neither a path string nor None"),
    "no KERNEL_SHA256": ((f'KERNEL_SHA256 = "{SHA}"\n', ""), None, "no KERNEL_SHA256 = ..."),
    "a KERNEL_SHA256 that is no hash": ((SHA, "abc"), "KERNEL_SHA256", "KERNEL_SHA256 is not 64 hex digits ('abc')"),
    "no launch": (("def launch(", "def start("), None, "no def launch(...)"),
    "a launch without a grid": (("    grid = (triton", "    blocks = (triton"), "def launch", "launch() must assign grid = (...) once (not at all here)"),
    "a grid that is not a tuple": (('grid = (triton.cdiv(n_elements, config["BLOCK_SIZE"]),)', "grid = lambda meta: (1,)"), "    grid = ", "launch()'s grid is not a tuple of one to three axes (lambda meta: (1,))"),
    "a four-axis grid": (('grid = (triton.cdiv(n_elements, config["BLOCK_SIZE"]),)', "grid = (1, 1, 1, 1)"), "    grid = ", "grid has 4 axes"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_each_error_names_the_file_the_line_and_what_is_wrong(case):
    (old, new), piece, says = ERRORS[case]
    text = edited(old, new)
    with pytest.raises(ModuleFileError) as caught:
        read_module_file(text, "g0/k.py")
    message = str(caught.value)
    assert isinstance(caught.value, ParseError) and "\n" not in message
    prefix = "g0/k.py: " if piece is None else f"g0/k.py:{line_of(text, piece)}: "
    assert message.startswith(prefix), message
    assert says in message, message
    error = caught.value
    assert error.detail == (error.problem if piece is None else f"line {error.line}: {error.problem}")  # for a caller that names the file


def test_the_region_alone_reads_as_in_the_file():
    defs = read_kernel_region(REGION, "k.py")
    assert defs.kernel.name == "square_square_kernel" and defs.constexprs == ("BLOCK_SIZE",) and defs.kernel.lineno == 2
    with pytest.raises(ModuleFileError, match=r"^k\.py:1: the kernel region holds `x = 1`"):
        read_kernel_region("x = 1\n" + REGION, "k.py")


# ------------------------------------------------------------------------------------- predicates and dtype tables

JIT_DEFS = {
    "@triton.jit": True,
    "@triton.jit(do_not_specialize=[0])": True,
    "@jit": True,
    "@triton_heuristics.pointwise(size_hints={})\n@triton.jit": True,
    "@triton.autotune(configs=[], key=[])": False,
    "@numba.jit": False,
    "@functools.cache": False,
}


@pytest.mark.parametrize("decorators", sorted(JIT_DEFS))
def test_one_jit_predicate_for_both_trees(decorators):
    source = f"{decorators}\ndef k(x):\n    pass\n"
    assert is_jit_def(ast.parse(source).body[0]) is JIT_DEFS[decorators]
    fn = cst.parse_module(source).body[0]
    assert any(is_jit_decorator_cst(d.decorator) for d in fn.decorators) is JIT_DEFS[decorators]  # type: ignore[attr-defined]


@pytest.mark.parametrize("annotation, constexpr", [("tl.constexpr", True), ("triton.language.constexpr", True), ("constexpr", True),
                                                   ('"tl.constexpr"', True), ("tl.int32", False), ("int", False)])  # fmt: skip
def test_one_constexpr_predicate_for_both_trees(annotation, constexpr):
    source = f"def k(X: {annotation}):\n    pass\n"
    assert is_constexpr_annotation(ast.parse(source).body[0].args.args[0].annotation) is constexpr  # type: ignore[attr-defined]
    param = cst.parse_module(source).body[0].params.params[0]  # type: ignore[attr-defined]
    assert is_constexpr_annotation_cst(param.annotation.annotation) is constexpr


def test_every_dtype_spelling_lives_in_dtypes():
    assert triton_pointer_dtype("*u16") == "uint16" and triton_pointer_dtype("*u1") == "bool" and triton_pointer_dtype("i32") is None
    fp8 = {"float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16"}
    assert {k: TRITON_POINTEE[k] for k in fp8} == fp8
    assert {TRITON_DTYPES[v] for v in fp8.values()} == set(fp8)
    assert TL_DTYPES["float8e4nv"] == "float8_e4m3fn" and TL_DTYPES["int1"] == "bool" and TL_DTYPES["uint16"] == "uint16"
    assert torch_dtype_name("torch.half") == "float16" and torch_dtype_name("long") == "int64" and torch_dtype_name("torch.complex64") is None
    assert all(torch in ITEMSIZE and TRITON_DTYPES[triton] == torch for torch, triton, _, _ in POINTER_DTYPES)
    assert ITEMSIZE["uint16"] == 2 and ITEMSIZE["float8_e5m2fnuz"] == 1
    # the twin's C++ types are keyed by dtypes' Triton names, and its lookups come from dtypes' tables
    assert set(CTYPES) <= set(TRITON_DTYPES)
    assert TWIN_DTYPE_OF_TORCH["uint16"] == "u16" and TWIN_DTYPE_OF_TL["int1"] == "i1" and "float8_e4m3fn" not in TWIN_DTYPE_OF_TORCH


def test_a_u16_pointer_gets_its_dtype_everywhere():
    text = edited("(1,), torch.float32),", "(1,), torch.uint16),")
    assert read_module_file(text, "k.py").arguments["a_ptr"].dtype == "uint16"  # type: ignore[union-attr]
    assert compile_args(read_kernel_module(text, "k.py")).signature["a_ptr"] == "*u16"
    assert read_module(text).arg_dtypes["a_ptr"] == "u16"


def test_an_fp8_pointer_compiles_for_ptx_but_gets_no_twin():
    text = edited("(1,), torch.float32),", "(1,), torch.float8_e4m3fnuz),")
    assert compile_args(read_kernel_module(text, "k.py")).signature["a_ptr"] == "*fp8e4b8"
    with pytest.raises(NoTwin, match="argument a_ptr has dtype float8_e4m3fnuz, which the twin does not handle"):
        read_module(text)


# ---------------------------------------------------------------------------------------- the readers built on it


def test_ptx_specializes_as_tritons_launcher_would():
    text = edited(REGION, textwrap.dedent("""\
        @triton.jit(do_not_specialize=['n_cols'])
        def k(a_ptr, b_ptr, n_rows, n_cols, one, big, scale, flag, BLOCK: tl.constexpr):
            tl.store(a_ptr + tl.arange(0, BLOCK), tl.load(b_ptr + tl.arange(0, BLOCK)))
    """))
    text = re.sub(r"^ARGUMENTS = \{.*?^\}", textwrap.dedent("""\
        ARGUMENTS = {
            "a_ptr": Tensor((8,), (1,), torch.bfloat16, offset=3),
            "b_ptr": Tensor((8,), (1,), torch.bfloat16, offset=8),
            "n_rows": 1,
            "n_cols": 32,
            "one": 17,
            "big": 8589934592,
            "scale": -0.5,
            "flag": True,
        }"""), text, flags=re.M | re.S)
    text = edited('"BLOCK_SIZE": 1024,', '"BLOCK": 64,', text)
    text = edited('OUTPUTS = ["out_ptr"]', 'OUTPUTS = ["a_ptr"]', text)
    args = compile_args(read_kernel_module(text, "k.py"))
    assert args.signature == {
        "a_ptr": "*bf16", "b_ptr": "*bf16", "n_rows": "constexpr", "n_cols": "i32", "one": "i32", "big": "i64",
        "scale": "fp32", "flag": "u1", "BLOCK": "constexpr",
    }  # fmt: skip
    assert args.constexprs == {"n_rows": 1, "BLOCK": 64}
    assert sorted(args.attrs) == [1, 5]  # b_ptr starts 16 bytes in, a_ptr 6; big is a multiple of 16; n_cols is not specialized
    assert args.options == {"num_warps": 4, "num_stages": 1}
    unaligned = compile_args(read_kernel_module(edited("@triton.jit\n", "@triton.jit(do_not_specialize=['a_ptr'])\n"), "k.py"))
    assert sorted(unaligned.attrs) == [1, 2]  # as Triton's launcher: a pointer it does not specialize is not marked aligned


@pytest.mark.parametrize("body, refused", [
    ("    open('x', 'w')\n", "uses 'open'"),
    ("    tl.__builtins__\n", "reads attribute '__builtins__'"),
])  # fmt: skip
def test_ptx_still_refuses_a_body_outside_tritons_vocabulary(body, refused):
    text = edited("    tl.store(out_ptr + (offsets), square_1, mask)\n", "    tl.store(out_ptr + (offsets), square_1, mask)\n" + body)
    read_module_file(text, "k.py")  # in the format: the refusal is harvest ptx's
    with pytest.raises(ParseError, match=f"refusing to compile the kernel body: .*{re.escape(refused)}"):
        read_kernel_module(text, "k.py")


def test_ptx_refuses_an_annotation_its_compile_process_cannot_evaluate():
    text = edited("BLOCK_SIZE : tl.constexpr)", "BLOCK_SIZE : constexpr)")
    assert read_module_file(text, "k.py").constexprs == ("BLOCK_SIZE",)
    with pytest.raises(ParseError, match="refusing to run the kernel region: parameter BLOCK_SIZE is annotated constexpr"):
        read_kernel_module(text, "k.py")


def test_the_twin_translates_the_module():
    facts = read_module(SQUARE, "g0/k.py")
    assert facts.params == ("a_ptr", "out_ptr", "n_elements") and facts.constexprs == {"BLOCK_SIZE": 1024}
    assert facts.arg_dtypes == {"a_ptr": "fp32", "out_ptr": "fp32", "n_elements": "i32"}
    assert facts.stored == {"out_ptr"} and facts.pointer_params == {"a_ptr", "out_ptr"}
    twin = translate(facts)
    assert twin.shape == "pointwise" and twin.declaration == "void launch(torch::Tensor a_ptr, torch::Tensor out_ptr, int64_t n_elements);"


def test_the_twin_says_why_it_cannot_read_a_module():
    with pytest.raises(NoTwin, match=r"the module is not one harvest can read \(line \d+: ARGUMENTS\['a_ptr'\] calls View"):
        read_module(edited("Tensor((100000000,), (1,), torch.float32),", "View(0, (100000000,), (1,), 0, torch.float32),"), "g0/k.py")


def test_sweep_reads_the_modules_block_sizes():
    raw = (ROOT / "extracted/h200/square_square/raw/g0_inference/output_code.py").read_text()
    kernel = parse_output_code(raw, name="g0_inference").kernel("triton_poi_fused_pow_0")
    module = read_module_file(SQUARE, "k.py")
    assert block_names(kernel, module) == {"XBLOCK": "BLOCK_SIZE"}
    space = sweep_space(kernel, module)
    assert [b.name for b in space.blocks] == ["BLOCK_SIZE"] and space.config == dict(module.config)
    assert sweep_configs(space)[0] == {"BLOCK_SIZE": 1024, "num_warps": 4, "num_stages": 1}
    # a size the rename took out of the def (its value set in the body): the block sizes still pair up
    dropped = edited("def square_square_kernel(a_ptr, out_ptr, n_elements, BLOCK_SIZE", "def square_square_kernel(a_ptr, out_ptr, BLOCK_SIZE")
    dropped = edited('    "n_elements": 100000000,\n', "", dropped)
    assert block_names(kernel, read_module_file(dropped, "k.py")) == {"XBLOCK": "BLOCK_SIZE"}


def test_bench_names_the_kernel_as_the_gpu_does():
    assert kernel_function_name(SQUARE, "fallback") == "square_square_kernel"
    assert kernel_function_name("print('not a module')\n", "fallback") == "fallback"
