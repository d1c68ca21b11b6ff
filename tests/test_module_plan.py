"""Plan, then render: plan_module decides everything from typed inputs; render(plan) only writes it out."""

import dataclasses
import textwrap

import pytest
from conftest import CUDA_FIXTURES

import harvest.module.pool
from harvest.api import extract
from harvest.module.plan import ModulePlan, kernel_code
from harvest.module.render import render
from harvest.rename import RenameResult


def _code(source: str, name: str = "k") -> RenameResult:
    return RenameResult(textwrap.dedent(source).strip() + "\n", name, mapping=(), params=(), ok=True)


KERNEL = """
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    @triton.jit
    def k(in_ptr, out_ptr, ks0, XBLOCK: tl.constexpr):
        # libdevice.exp( and tl.atomic_add( in a comment are not calls
        x = tl.load(in_ptr + tl.arange(0, XBLOCK))
        tl.store(out_ptr + tl.arange(0, XBLOCK), libdevice.exp(x))
"""


def test_kernel_code_splits_imports_and_specializes_like_inductor():
    code = kernel_code(_code(KERNEL), ["ks0"])
    assert code.imports == ("import triton", "import triton.language as tl", "from triton.language.extra import libdevice")
    assert code.code.startswith(
        "# Not specialized on their values, as Inductor compiled it (the same code for every value):\n"
        "@triton.jit(do_not_specialize=['ks0'])\n"
        "def k(in_ptr, out_ptr, ks0, XBLOCK: tl.constexpr):\n"
    )
    assert kernel_code(_code(KERNEL), []).code.startswith("@triton.jit\ndef k(")


def test_kernel_code_reads_calls_from_the_tree_not_the_text():
    code = kernel_code(_code(KERNEL), [])
    assert code.uses_helpers and not code.uses_atomics  # the comment mentions an atomic; the tree has none
    atomic = kernel_code(_code(KERNEL.replace("tl.store(out_ptr + tl.arange(0, XBLOCK), libdevice.exp(x))",
                                              "tl.atomic_add(out_ptr + tl.arange(0, XBLOCK), x)")), [])
    assert atomic.uses_atomics and not atomic.uses_helpers


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    """Every plan of one fixture graph, and the source render made of it (rendered here, not in forked workers)."""
    seen: list[tuple[ModulePlan, str]] = []

    def keep(plan):
        source = render(plan)
        seen.append((plan, source))
        return source

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(harvest.module.pool, "render", keep)
        patch.setattr("os.cpu_count", lambda: 1)
        extract(CUDA_FIXTURES / "small_model/graph_000.py", tmp_path_factory.mktemp("plan") / "out")
    assert seen
    return seen


def test_a_plan_is_a_frozen_value(plans):
    for plan, _ in plans:
        hash(plan)  # tuples all the way down: nothing in it can change after planning
        with pytest.raises(dataclasses.FrozenInstanceError):
            plan.kernel_name = "other"  # type: ignore[misc]


def test_render_writes_the_plan_and_decides_nothing(plans):
    plan, source = plans[0]
    changed = render(dataclasses.replace(plan, exact_possible=not plan.exact_possible))
    diff = [(a, b) for a, b in zip(source.splitlines(), changed.splitlines()) if a != b]
    assert len(diff) == 1 and diff[0][0].startswith("EXACT_POSSIBLE = ")
    assert render(plan) == source


def test_the_header_quotes_three_source_lines_the_users_own_first_and_places_the_rest():
    from harvest.fusion import SourceLine
    from harvest.module.plan import header_source_lines

    lines = (
        SourceLine("<installed>/transformers/masking_utils.py", 78, "causal_mask_function", "return kv_idx <= q_idx"),
        SourceLine("<installed>/transformers/masking_utils.py", 390, "_expand", "q = q[None]"),
        SourceLine("<installed>/transformers/gpt2.py", 59, "attention", "w = q @ k"),
        SourceLine("<installed>/transformers/gpt2.py", 62, "attention", "w = w + mask"),
        SourceLine("<installed>/transformers/gpt2.py", 64, "attention", "w = w.softmax(-1)"),
        SourceLine("model.py", 12, "forward", "return self.block(x)"),
    )
    assert header_source_lines(lines) == (
        "model.py:12 in forward: return self.block(x)",
        "<installed>/transformers/gpt2.py:59 in attention: w = q @ k",
        "<installed>/transformers/gpt2.py:62 in attention: w = w + mask",
        "and <installed>/transformers/gpt2.py:64; <installed>/transformers/masking_utils.py:78, 390",
    )
    # four lines fit without a place line: every one is quoted, in the run's order
    assert header_source_lines(lines[:4]) == tuple(f"{s.file}:{s.line} in {s.function}: {s.code}" for s in lines[:4])
    assert header_source_lines(()) == ()
