"""A kernel's facts (harvest.kernel_facts): read from real fixture kernels, and gathered in one walk per source that
fusion, the reference and render all read."""

import ast
from collections import Counter

import pytest
from conftest import CUDA_FIXTURES

import harvest.kernel_facts
from harvest.api import extract
from harvest.fusion import count_source
from harvest.kernel_facts import kernel_facts
from harvest.module.arguments import def_constexprs
from harvest.parse import parse_output_code
from harvest.reference.access import scan_kernel
from harvest.syntax import kernel_trees

GPT2_BACKWARD = CUDA_FIXTURES / "models/gpt2/g3_backward.py"
# Extracted here only: an extraction caches its parse, and test_parse_once must parse gpt2's graph itself.
CONV_BN_BACKWARD = CUDA_FIXTURES / "models/conv_bn/g1_backward.py"


def _kernel(name_end: str):
    [kernel] = [k for k in parse_output_code(GPT2_BACKWARD.read_text()).kernels if k.name.endswith(name_end)]
    return kernel


def _accesses(function):
    return [(a.kind, a.pointer, a.address_text, a.mask_text) for a in function.accesses]


def test_a_pointwise_kernel_that_updates_in_place():
    kernel = _kernel("tanh_backward_view_6")
    function = kernel_facts(kernel.source).function(kernel.name)
    assert function.name == kernel.name and function.jit
    assert function.params == ("in_out_ptr0", "in_ptr0", "xnumel", "XBLOCK")
    assert function.constexprs == ("XBLOCK",)
    assert _accesses(function) == [
        ("load", "in_out_ptr0", "in_out_ptr0 + x0", "None"),
        ("load", "in_ptr0", "in_ptr0 + x0", "None"),
        ("store", "in_out_ptr0", "in_out_ptr0 + x0", "None"),
    ]
    [store] = function.stores_of("in_out_ptr0")
    assert ast.unparse(store.value) == "tmp26"
    assert [a.order for a in function.accesses] == sorted(a.order for a in function.accesses)
    assert [c.name for c in function.libdevice_calls] == ["libdevice.tanh"]
    assert function.reduction_calls == ()
    assigned = {a.target: a.value for a in function.assignments}
    assert ast.unparse(assigned["tmp26"]) == "tmp22 + tmp25"


def test_a_masked_reduction():
    kernel = _kernel("native_layer_norm_backward_view_3")
    function = kernel_facts(kernel.source).function(kernel.name)
    assert _accesses(function) == [
        ("load", "in_ptr0", "in_ptr0 + (x0 + 512 * r0_1)", "xmask"),
        ("store", "out_ptr0", "out_ptr0 + x0", "xmask"),
    ]
    assert [c.name for c in function.reduction_calls] == ["tl.sum"]
    assert function.loads_of("out_ptr0") == () and len(function.loads_of("in_ptr0")) == 1


def test_an_atomic_is_read_and_written():
    kernel = _kernel("embedding_dense_backward_lift_fresh_sum_18")
    function = kernel_facts(kernel.source).function(kernel.name)
    [atomic] = [a for a in function.accesses if a.kind == "atomic"]
    assert (atomic.call, atomic.pointer, atomic.address_text) == ("tl.atomic_add", "out_ptr1", "out_ptr1 + (x2 + 512 * tmp8)")
    assert ast.unparse(atomic.value) == "tmp13"
    access = scan_kernel(kernel)
    assert access.loaded == {"in_ptr0", "in_ptr1", "out_ptr1"} and access.stored == {"out_ptr1"}
    assert access.first == {"in_ptr0": "load", "in_ptr1": "load"}
    counts = count_source(kernel.source)
    assert (counts.loads, counts.stores, counts.reduction_calls) == (2, 0, ("tl.sum",))
    assert counts.stored_params == ()  # an atomic is not a tl.store


def test_a_source_without_the_kernel_name_falls_back_to_its_last_def():
    facts = kernel_facts("def helper(a):\n    return a\n\n@triton.jit\ndef k(p, X: tl.constexpr):\n    tl.store(p, 1)\n")
    assert facts.function("other").name == "k" and facts.named("other") is None
    assert facts.functions[1].jit and facts.functions[0].jit is False
    assert facts.outside.calls == () and facts.named("k").constexprs == ("X",)
    with pytest.raises(SyntaxError):
        kernel_facts("def broken(:\n")


@pytest.fixture
def walks(monkeypatch) -> Counter:
    """Walks of kernel trees from here on, by tree (the facts' cache emptied first)."""
    kernel_facts.cache_clear()
    counted: Counter = Counter()
    real = harvest.kernel_facts._gather

    def counting(tree):
        counted[id(tree)] += 1
        return real(tree)

    monkeypatch.setattr(harvest.kernel_facts, "_gather", counting)
    return counted


def test_every_reader_shares_one_walk(walks):
    kernel = _kernel("tanh_backward_view_6")
    for _ in range(2):
        count_source(kernel.source)
        scan_kernel(kernel)
        def_constexprs(kernel)
    assert sum(walks.values()) == 1


def test_each_kernel_source_is_walked_once_per_extraction(tmp_path, monkeypatch, walks):
    sources = {k.source for k in parse_output_code(CONV_BN_BACKWARD.read_text()).kernels}
    monkeypatch.setattr("os.cpu_count", lambda: 1)  # render here, not in forked workers the counter cannot see
    result = extract(CONV_BN_BACKWARD, tmp_path / "out")
    assert sum(1 for g in result.manifest["graphs"] for k in g["kernels"] if k["module"]) >= 5
    assert set(walks) == {id(kernel_trees(s).ast) for s in sources}  # every kernel's shared tree, each walked once
    assert set(walks.values()) == {1}
