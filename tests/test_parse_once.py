"""Each kernel source is parsed once per extraction: parse, fusion, rename, reference and render all read the same
trees (harvest.syntax.kernel_trees). Counted here by wrapping the two parsers for a whole extraction."""

import ast
from collections import Counter

import libcst as cst
import pytest
from conftest import CUDA_FIXTURES

import harvest.syntax
from harvest.api import extract
from harvest.parse import parse_output_code


def test_every_kernel_source_is_parsed_once_per_extraction(tmp_path, monkeypatch):
    artifact = CUDA_FIXTURES / "models/gpt2/g3_backward.py"
    sources = {k.source for k in parse_output_code(artifact.read_text()).kernels}
    harvest.syntax.kernel_trees.cache_clear()
    seen: Counter = Counter()
    real_cst, real_ast = cst.parse_module, ast.parse

    def counting_cst(source, *args, **kwargs):
        seen["cst", source] += 1
        return real_cst(source, *args, **kwargs)

    def counting_ast(source, *args, **kwargs):
        seen["ast", source] += 1
        return real_ast(source, *args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", counting_cst)
    monkeypatch.setattr(ast, "parse", counting_ast)
    monkeypatch.setattr("os.cpu_count", lambda: 1)  # render here, not in forked workers the counters cannot see
    result = extract(artifact, tmp_path / "out")
    modules = [k for g in result.manifest["graphs"] for k in g["kernels"] if k["module"]]
    assert len(sources) >= 5 and len(modules) >= 5
    for source in sources:
        assert seen["cst", source] == 1, "a kernel source was parsed with libcst more than once"
        assert seen["ast", source] == 1, "a kernel source was parsed with ast more than once"


@pytest.mark.parametrize("broken", ["def k(:\n    pass\n", "@triton.jit\ndef k(x):\n    return (\n"])
def test_a_source_that_does_not_parse_says_why_once(broken):
    harvest.syntax.kernel_trees.cache_clear()
    trees = harvest.syntax.kernel_trees(broken)
    assert trees.cst is None and trees.ast is None and trees.cst_error is not None and trees.ast_error is not None
    with pytest.raises(SyntaxError):
        harvest.syntax.kernel_ast(broken)
