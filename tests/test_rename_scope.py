"""harvest/rename/scope.py stands in for libcst's ScopeProvider and ParentNodeProvider when renaming: on every
kernel of the fixture captures, and on hand-written corner cases, it must name the same nodes as they do."""

from __future__ import annotations

import ast
import builtins
import glob
import io
import keyword
import tokenize

import libcst as cst
import pytest
from conftest import ROOT
from libcst.metadata import MetadataWrapper, ParentNodeProvider, ScopeProvider

from harvest.capture.artifacts import looks_like_output_code
from harvest.rename.scope import kernel_scope
from harvest.rename.standalone import kernel_def, standalone
from harvest.syntax import kernel_trees


def _reference(module: cst.Module, kernel: cst.FunctionDef):
    """What libcst's providers say: the kernel's bindings and reads by name (node ids), reads of nested scopes that
    see a kernel variable, every name read in the module, and the parents."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    resolved = wrapper.resolve_many([ScopeProvider, ParentNodeProvider])  # (one walk for the batchable providers)
    scopes, parents = resolved[ScopeProvider], resolved[ParentNodeProvider]
    scope = scopes[kernel.body.body[0]]
    assignments = {a.name: sorted(id(x.node) for x in scope.assignments[a.name]) for a in scope.assignments}
    accesses: dict[str, list[int]] = {}
    for a in scope.accesses:
        if isinstance(a.node, cst.Name):
            accesses.setdefault(a.node.value, []).append(id(a.node))
    inner: dict[str, list[int]] = {}
    for s in set(scopes.values()):
        if s is None or s is scope or getattr(s, "parent", None) is not scope:
            continue
        for a in s.accesses:
            if isinstance(a.node, cst.Name) and not s.assignments[a.node.value] and a.node.value in assignments:
                inner.setdefault(a.node.value, []).append(id(a.node))
    reads = {a.node.value for s in set(scopes.values()) if s is not None for a in s.accesses if isinstance(a.node, cst.Name)}
    return ({k: sorted(v) for k, v in accesses.items()}, assignments, {k: sorted(v) for k, v in inner.items()}, reads,
            dict(parents))


def _mine(module: cst.Module, kernel: cst.FunctionDef):
    s = kernel_scope(module, kernel)
    return ({k: sorted(id(n) for n in v) for k, v in s.accesses.items()},
            {k: sorted(id(n) for n in v) for k, v in s.assignments.items()},
            {k: sorted(id(n) for n in v) for k, v in s.inner_accesses.items()}, s.module_reads, s.parents)


def _same(module: cst.Module) -> None:
    kernel = kernel_def(module)
    assert kernel is not None
    expected, got = _reference(module, kernel), _mine(module, kernel)
    assert got[:4] == expected[:4]
    assert all(got[4].get(node) is parent for node, parent in expected[4].items())


def _fixture_kernels() -> dict[str, cst.Module]:
    """Every kernel of the fixture captures, once up to renaming (recompiles, replays and the same fusion in another
    model repeat kernels that differ only in names and numbers, and scope analysis does not see the difference: a
    third of the 660 kernels), each with its libcst tree. The sources are read from the `async_compile.triton(...)`
    calls with ast: parse_output_code's reading of the wrappers was half this test's time."""
    trees: dict[str, cst.Module] = {}
    seen: set[tuple[str, ...]] = set()
    for path in sorted(glob.glob(str(ROOT / "tests/fixtures/torch-*/**/*.py"), recursive=True)):
        text = open(path).read()
        if not looks_like_output_code(text):
            continue
        for source in _kernel_sources(text):
            shape = _up_to_renaming(source)
            if shape not in seen:
                seen.add(shape)
                trees[source] = kernel_trees(source).cst or cst.parse_module(source)
    return trees


def _kernel_sources(wrapper: str) -> list[str]:
    """The kernel source strings of an output_code.py: `name = async_compile.triton('name', '''source''', ...)`."""
    return [call.args[1].value for call in ast.walk(ast.parse(wrapper))
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "triton"
            and len(call.args) > 1 and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)]


def _up_to_renaming(source: str) -> tuple[str, ...]:
    """The source's tokens with every name but Python's keywords and builtins renamed in order of first use, every
    number and string made one: two kernels with the same tokens have the same scopes, node for node."""
    names: dict[str, str] = {}
    tokens = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NUMBER:
            tokens.append("0")
        elif token.type == tokenize.STRING:
            tokens.append("''")
        elif token.type in (tokenize.COMMENT, tokenize.NL):
            continue
        elif token.type == tokenize.NAME and not keyword.iskeyword(token.string) and not hasattr(builtins, token.string):
            tokens.append(names.setdefault(token.string, f"n{len(names)}"))
        else:
            tokens.append(token.string)
    return tuple(tokens)


def test_same_nodes_as_libcst_scope_analysis_on_every_fixture_kernel():
    trees = _fixture_kernels()
    assert len(trees) > 400
    for source, tree in trees.items():
        _same(standalone(tree, source))


CORNERS = """
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers as th

def helper(a, b):
    return a + b + zz

@triton.jit
def kernel(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr = 4):
    x0 = xnumel
    x0 += 1
    tmp0, (tmp1, tmp2) = 1, (2, x0)
    for r0 in range(3):
        tmp1 = tmp1 + r0
    tmp3 = [tmp2 + j for j in range(tmp1)]
    tmp4 = lambda t: t + tmp0 + XBLOCK
    out_ptr0[0] = tl.load(in_ptr0, mask=tmp2)
    tl.store(out_ptr0, th.maximum(tmp3, tmp4(1)))
"""


def test_same_nodes_as_libcst_scope_analysis_on_corner_cases():
    _same(cst.parse_module(CORNERS))


@pytest.mark.parametrize("statement", ["global x0", "nonlocal x0"])
def test_global_and_nonlocal_are_refused(statement):
    module = cst.parse_module(f"x0 = 1\ndef kernel(a):\n    {statement}\n    return a\n")
    with pytest.raises(ValueError, match="global or nonlocal"):
        kernel_scope(module, module.body[1])
