"""Regressions of the launch bugs real models hit, on real CUDA captures (torch 2.11, H200) of examples/models/.

Seen before record-on-run: `NameError: name 'n_rows' is not defined` and `got multiple values for argument 'n_rows'`
(a full reduction whose `xnumel = 1` Inductor made a constexpr constant but still passes positionally),
`NameError: name 'n_elements' is not defined` (an add_ kernel, the same cause), and `got multiple values for argument
'load_seed_offset'` (a dropout kernel whose seed offset became a constant). Root cause: launch() passed what the def
does not annotate tl.constexpr through the config too, or named a size it never bound. These tests read the CUDA
captures as artifacts (no run, no GPU) and check every generated launch() against its kernel's def.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from conftest import CUDA_FIXTURES

from harvest.api import extract

MODELS = CUDA_FIXTURES / "models"
GRAPHS = sorted(MODELS.glob("*/*.py"))


@pytest.fixture(scope="module")
def extractions(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for graph in GRAPHS:
        target = tmp_path_factory.mktemp(f"{graph.parent.name}_{graph.stem}") / "out"
        extract(graph, target)
        out[f"{graph.parent.name}/{graph.stem}"] = target
    return out


def _launch_problems(source: str) -> list[str]:
    tree = ast.parse(source)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    launch = functions["launch"]
    kernel_name = next(n for n in functions if n not in {"launch", "reference", "check", "bench", "compare", "make_inputs",
                                                         "load_record", "unedited", "this_device", "reduce_partials"}
                       and not n.startswith("_") and any(d for d in functions[n].decorator_list))
    kernel = functions[kernel_name]
    constexprs = [a.arg for a in kernel.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)]
    positional = [a.arg for a in kernel.args.args if a.arg not in constexprs]
    call = next(node for node in ast.walk(launch) if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript))
    passed = [ast.unparse(a) for a in call.args]
    launch_params = {a.arg for a in launch.args.args}
    config = next(n.value for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "CONFIG")
    config_keys = {k.value for k in config.keys}
    grid = next(n.value for n in ast.walk(launch) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "grid")
    grid_names = {n.id for n in ast.walk(grid) if isinstance(n, ast.Name)} - {"triton", "config"}
    problems = []
    if passed != positional:
        problems.append(f"launch passes {passed}, the def takes {positional} positionally")
    if config_keys - set(constexprs) - {"num_warps", "num_stages"}:
        problems.append(f"CONFIG passes {sorted(config_keys - set(constexprs))} again by keyword")
    if set(constexprs) - config_keys:
        problems.append(f"no CONFIG value for {sorted(set(constexprs) - config_keys)}")
    if grid_names - launch_params:
        problems.append(f"the grid uses {sorted(grid_names - launch_params)}, which launch() does not bind")
    return problems


def test_every_module_of_the_real_models_launches_its_kernel_as_the_def_says(extractions):
    checked = 0
    problems = []
    for name, out in extractions.items():
        manifest = json.loads((out / "manifest.json").read_text())
        for kernel in (k for g in manifest["graphs"] for k in g["kernels"]):
            if kernel["module"] is None:
                assert "internal error" not in kernel["standalone_reason"], kernel
                continue
            checked += 1
            problems += [f"{name}/{kernel['module']}: {p}" for p in _launch_problems((out / kernel["module"]).read_text())]
    assert not problems, "\n".join(problems)
    assert checked >= 60


def test_the_cases_that_broke_are_among_them(extractions):
    """The dropout kernel with a constant seed offset, and a full reduction with xnumel = 1, render standalone."""
    gpt2 = json.loads((extractions["gpt2/g0_forward"] / "manifest.json").read_text())
    seeded = [k for g in gpt2["graphs"] for k in g["kernels"] if "dropout" in k["name"] and k["module"]]
    assert seeded
    source = (extractions["gpt2/g0_forward"] / seeded[0]["module"]).read_text()
    assert '"load_seed_offset"' not in source.split("CONFIG = ", 1)[1].split("\n", 1)[0]
    scalar = [p for p in GRAPHS if "'xnumel': 'constexpr'" in p.read_text()]
    assert scalar, "a capture with a constexpr xnumel"


def test_static_layouts_fail_with_a_precise_reason_and_point_at_the_record(extractions):
    """Without a run, buffers made by extern calls have no layout in the text: the reason says so (the run fixes it)."""
    reasons = [k["standalone_reason"] for out in extractions.values()
               for g in json.loads((out / "manifest.json").read_text())["graphs"] for k in g["kernels"] if k["standalone_reason"]]
    for reason in reasons:
        assert "no run was recorded" in reason or "never launched" in reason, reason
