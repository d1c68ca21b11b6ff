"""One size, one edit (issue 19 part 3): a size the kernel was compiled with is a real parameter, or it is gone from
the def, launch() and ARGUMENTS and stays one line of the kernel body that says why. Never a parameter that the body
overwrites.

The rename stage drops such parameters (RenameResult.dropped_params, tests/test_rename.py); here: the launch side
leaves them out (module_arguments.launched_kernel), and extracted modules still check.
"""

from __future__ import annotations

import ast
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import CPU_FIXTURES, CUDA_FIXTURES, kernels, run_check
from conftest import harvest as harvest_command

from harvest import api
from harvest.model import Kernel
from harvest.module import pool
from harvest.module.arguments import FIXED_IN_BODY, launched_kernel, runtime_params
from harvest.module.plan import unspecialized_params
from harvest.rename import DroppedParam

KERNEL_REGION = re.compile(r"^# >>> kernel.*?\n(.*?)^# <<< kernel", re.S | re.M)


def kernel_def(module_text: str) -> ast.FunctionDef:
    """The @triton.jit def in a module's kernel region (between `# >>> kernel` and `# <<< kernel`)."""
    region = KERNEL_REGION.search(module_text)
    assert region, "no kernel region"
    tree = ast.parse(region.group(1))
    jitted = [d for d in tree.body if isinstance(d, ast.FunctionDef)
              and any("jit" in ast.unparse(decorator) for decorator in d.decorator_list)]
    assert jitted, "no @triton.jit def in the kernel region"
    return jitted[-1]


def assigned_names(fn: ast.FunctionDef) -> set[str]:
    targets = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            targets += node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)):
            targets.append(node.target)
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def overwritten_params(module_text: str) -> list[str]:
    fn = kernel_def(module_text)
    return sorted({a.arg for a in fn.args.args} & assigned_names(fn))


# --- the launch side, pure --------------------------------------------------------------------------------------------

KERNEL = Kernel(
    name="k", source="@triton.jit\ndef k(in_ptr0, out_ptr0, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr):\n    pass\n",
    kind="reduction", device_str="cuda",
    signature={"in_ptr0": "*fp32", "out_ptr0": "*fp32", "ks0": "i32", "xnumel": "i32", "r0_numel": "i32",
               "XBLOCK": "constexpr"},
    configs=({f"({i},)": [["tt.divisibility", 16]] for i in (0, 1, 4)},),
)


def test_launched_kernel_leaves_the_dropped_sizes_out_of_launch_and_do_not_specialize():
    launched = launched_kernel(KERNEL, (DroppedParam("r0_numel", "n_cols", 512, "the whole row is one block"),))
    assert runtime_params(KERNEL) == ["in_ptr0", "out_ptr0", "ks0", "xnumel", "r0_numel"]
    assert runtime_params(launched) == ["in_ptr0", "out_ptr0", "ks0", "xnumel"]
    # the dropped size keeps its place: Inductor's configs still name parameters by their index in its def
    assert list(launched.signature) == list(KERNEL.signature) and launched.signature["r0_numel"] == FIXED_IN_BODY
    assert unspecialized_params(KERNEL) == ["ks0", "xnumel"]  # (4,) was r0_numel: specialized
    assert unspecialized_params(launched) == ["ks0", "xnumel"]
    assert launched_kernel(KERNEL, ()) is KERNEL


# --- plans of real fixture graphs -------------------------------------------------------------------------------------

PLANNED = [
    CUDA_FIXTURES / "small_model/graph_000.py",  # persistent reductions: n_cols fixed
    CUDA_FIXTURES / "models/gpt2/g0_forward.py",  # a 2-D pointwise kernel whose y size is fixed, looped reductions
    CUDA_FIXTURES / "models/graph_break_recompile/g11_backward.py",  # a pointwise kernel with no bounds mask
    CPU_FIXTURES / "dynamic_shapes/graph_000.py",  # size symbols: ks0 stays a parameter
]


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    seen = []

    def keep(plan):
        seen.append(plan)
        return real_render(plan)

    real_render = pool.render
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pool, "render", keep)
        patch.setattr("os.cpu_count", lambda: 1)  # render in this process, where the patch is
        for index, path in enumerate(PLANNED):
            api.extract(path, tmp_path_factory.mktemp("plans") / f"out{index}")
    return seen


def test_launch_takes_exactly_the_kernels_parameters(plans):
    """launch() and ARGUMENTS hold the def's runtime parameters, no more: a size the body fixes is in neither."""
    dropped = 0
    for plan in plans:
        fn = ast.parse(plan.kernel_code).body[0]
        assert isinstance(fn, ast.FunctionDef), plan.kernel_name
        constexprs = {a.arg for a in fn.args.args if a.annotation and "constexpr" in ast.unparse(a.annotation)}
        params = [a.arg for a in fn.args.args if a.arg not in constexprs]
        assert [a.param for a in plan.arguments] == params, plan.kernel_name
        assert not set(params) & assigned_names(fn), plan.kernel_name
        assert set(plan.reference_params) <= set(params), plan.kernel_name  # the reference binds no dropped size
        fixed = re.findall(r"^    (\w+) = \d+  # fixed: ", plan.kernel_code, re.M)
        dropped += len(fixed)
        assert not set(fixed) & set(params)
    assert dropped >= 20, dropped


def test_the_grid_writes_a_fixed_size_as_its_value_and_keeps_every_axis(plans):
    for plan in plans:
        if plan.grid.recorded is not None:
            continue
        programs = {int(n) for n in re.findall(r"tl\.program_id\((\d)\)", plan.kernel_code)}
        assert len(plan.grid.axes) == max(programs, default=0) + 1, (plan.kernel_name, plan.grid)
        launch_params = {a.param for a in plan.arguments}
        for axis in plan.grid.axes:
            assert axis.size in launch_params or axis.size.isdigit(), (plan.kernel_name, axis)
    two_d = [p for p in plans if p.kernel_name == "addmm_cat_kernel"]
    assert two_d and [a.size for a in two_d[0].grid.axes] == ["x_numel", "16384"]  # y_numel = 16384, fixed


# --- end to end on the CPU path ---------------------------------------------------------------------------------------

EXTRACTED = [
    CPU_FIXTURES / "small_model/graph_000.py",
    CPU_FIXTURES / "small_model/graph_001.py",
    CPU_FIXTURES / "dynamic_shapes/graph_000.py",
]


@pytest.mark.parametrize("graph", EXTRACTED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_extracted_kernel_overwrites_a_parameter_and_every_module_checks(graph: Path, tmp_path):
    done = harvest_command("extract", str(graph), "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    modules = [out / k["module"] for k in kernels(json.loads((out / "manifest.json").read_text())) if k["module"]]
    assert modules
    texts = {m: m.read_text() for m in modules}
    overwritten = {m.name: overwritten_params(t) for m, t in texts.items() if overwritten_params(t)}
    assert not overwritten, overwritten
    if graph.parent.name == "small_model":
        assert any("# fixed: " in KERNEL_REGION.search(t).group(1) for t in texts.values())  # sizes were fixed here
    with ThreadPoolExecutor(max_workers=2) as pool:
        checks = dict(zip(modules, pool.map(run_check, modules)))
    failed = {m.name: c.stdout + c.stderr for m, c in checks.items() if c.returncode != 0}
    assert not failed, failed
