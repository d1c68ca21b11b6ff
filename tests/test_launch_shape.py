"""harvest.capture.launch_shape: which launch() functions `harvest run --with` may bypass (their kernel launched on
the grid launch() gave) and which it must call at every launch. Pure text in, names out."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from harvest.capture.launch_shape import grid_inputs

WRITTEN = '''def launch(a_ptr, out_ptr, n_rows, n_cols, config=CONFIG):
    """Launch softmax_kernel of g0_forward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]), min(n_cols, 65535) // 2, 1)
    softmax_kernel[grid](a_ptr, out_ptr, n_rows, n_cols, **config)
'''


def test_the_launch_harvest_writes_is_recognized_with_the_arguments_its_grid_reads():
    assert grid_inputs(WRITTEN, "softmax_kernel") == ("n_rows", "n_cols")
    assert grid_inputs(WRITTEN.replace("n_rows, config", "4096, config"), "softmax_kernel") == ("n_cols",)


@pytest.mark.parametrize("edit", [
    ("    grid = (", "    a_ptr = a_ptr * 2\n    grid = ("),  # a statement more
    ("triton.cdiv(n_rows", "triton.cdiv(a_ptr.shape[0]"),  # the grid reads a tensor's shape
    ("min(n_cols, 65535)", "sizes(n_cols)"),  # a function the grid may not call
    ("config[\"BLOCK_ROWS\"]", "BLOCKS[0]"),  # a global
    ("n_rows, n_cols, **config)", "n_cols, n_rows, **config)"),  # the arguments in another order
    ("**config)", "**config, num_warps=8)"),  # a keyword more
    ("softmax_kernel[grid]", "other_kernel[grid]"),  # another kernel
    ("[grid]", "[lambda meta: grid]"),  # a grid function
    ("config=CONFIG", "config=CONFIG, extra=1"),  # a parameter after config
])
def test_any_other_launch_is_called_as_written(edit):
    old, new = edit
    assert old in WRITTEN
    assert grid_inputs(WRITTEN.replace(old, new), "softmax_kernel") is None


def test_every_showcase_modules_launch_is_recognized():
    """The committed showcase (extracted/h200/: pointwise, persistent and looped reductions of five examples)."""
    modules = sorted((ROOT / "extracted" / "h200").glob("*/g*/*.py"))
    assert len(modules) >= 19
    for module in modules:
        text = module.read_text(encoding="utf-8")
        launch = re.search(r"^def launch\(.*?(?=^\S)", text, re.S | re.M).group(0)
        kernel = re.search(r"^    (\w+)\[grid\]", launch, re.M).group(1)
        assert grid_inputs(launch, kernel) is not None, module
