"""The model zoo in CI: models none of us wrote (examples/zoo/: torchvision, transformers, timm, diffusers), a few per
run, each extracted on the CPU path with every module's --check run. Every kernel must get a module whose check
passes, and every kernel without a full eager reference must say why (in the manifest and in its check's output).

Which models: of those whose libraries this machine has (conftest's requires_torchvision/timm/diffusers: a CPU
torch's torchvision comes only from PyTorch's own index), the file names ranked by sha256 of "<seed>:<file name>";
in that order, up to HARVEST_ZOO_MODELS
(default 2) whose kernel counts in docs/zoo.md's table fit in what is left of HARVEST_ZOO_KERNELS (default 40; kernels,
not seconds, as the table's times depend on the machine's load: on the idle 2-core machine this test took 18 s for 43
kernels, 41 s for 51, 106 s for 168, its checks two at a time through the fork server); a model the table does not
have yet counts as fitting.
The seed is HARVEST_ZOO_SEED (default "harvest-zoo"): a run is reproducible, and another seed picks others. The whole
zoo and its table: `python scripts/model_matrix.py --zoo --doc docs/zoo.md`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import EXAMPLES, harvest, kernels, requirement_met, run_command

ZOO = EXAMPLES / "zoo"
SEED = os.environ.get("HARVEST_ZOO_SEED", "harvest-zoo")
COUNT = int(os.environ.get("HARVEST_ZOO_MODELS", "2"))
BUDGET = int(os.environ.get("HARVEST_ZOO_KERNELS", "40"))
TABLE = EXAMPLES.parent / "docs" / "zoo.md"
LIBRARIES = ("torchvision", "transformers", "timm", "diffusers")
# A module whose recorded grid has more programs than this is checked with --shrink (as scripts/model_matrix.py --zoo
# does): the interpreter runs SHRINK programs of it, spread over the grid, and compares what they wrote.
SHRINK_ABOVE, SHRINK = 4096, 64


def zoo() -> list[Path]:
    return sorted(ZOO.glob("*.py"))


def measured(table: Path = TABLE) -> dict[str, int]:
    """How many kernels each model has in docs/zoo.md's table (scripts/model_matrix.py --zoo --doc)."""
    text = table.read_text(encoding="utf-8") if table.exists() else ""
    header = next((line for line in text.splitlines() if line.startswith("| model | graphs | kernels |")), None)
    if header is None:
        return {}
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    costs = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != len(columns) or not line.startswith("| ") or cells[0] in ("model", "**total**"):
            continue
        row = dict(zip(columns, cells))
        if row.get("kernels", "").isdigit():
            costs[row["model"]] = int(row["kernels"])
    return costs


def chosen(seed: str = SEED, count: int = COUNT, budget: int = BUDGET, costs: dict | None = None,
           candidates: list[Path] | None = None) -> list[Path]:
    """Zoo scripts (of `candidates`: those whose libraries this machine has) in the order of sha256("<seed>:<name>")
    (stable for a seed, spread over the zoo), up to `count` of them whose kernels fit in what is left of `budget`."""
    costs = measured() if costs is None else costs
    picked, left = [], budget
    for path in sorted(zoo() if candidates is None else candidates,
                       key=lambda path: hashlib.sha256(f"{seed}:{path.name}".encode()).hexdigest()):
        cost = costs.get(path.stem, 0)
        if len(picked) < count and cost <= left:
            picked.append(path)
            left -= cost
    return picked


def test_the_choice_is_stable_for_a_seed_another_seed_picks_others_and_the_budget_holds():
    free = dict.fromkeys((path.stem for path in zoo()), 0)
    assert chosen("a", 3, 100, free) == chosen("a", 3, 100, free) and len(chosen("a", 3, 100, free)) == 3
    assert len({tuple(chosen(str(seed), 3, 100, free)) for seed in range(8)}) > 1
    assert sorted(chosen("a", len(zoo()), 100, free)) == zoo()
    costly = dict.fromkeys(free, 100)
    first = chosen("a", 1, 1000, costly)
    costly[first[0].stem] = 1001  # over the budget: the next one in the seed's order instead
    assert chosen("a", 1, 1000, costly) == chosen("a", 2, 1000, dict(costly, **{first[0].stem: 0}))[1:]
    assert len(chosen("a", 5, 250, costly)) == 2
    assert measured(), f"{TABLE} has no table of the zoo (scripts/model_matrix.py --zoo --doc docs/zoo.md)"


def test_every_zoo_target_is_a_library_model_with_random_weights_and_says_what_it_exercises():
    targets = zoo()
    assert len(targets) >= 30
    assert {path.name.split("_", 1)[0] for path in targets} == set(LIBRARIES)
    for path in targets:
        source = path.read_text(encoding="utf-8")
        docstring = ast.get_docstring(ast.parse(source)) or ""
        assert f"harvest extract examples/zoo/{path.name}" in docstring, path.name
        assert path.name.split("_", 1)[0] in source.replace("import torch\n", ""), path.name  # the library it names
        assert "torch.manual_seed(0)" in source and "torch.compile" in source, path.name
        assert "torch.cuda.is_available()" in source, path.name  # small on the CPU, bigger on a GPU
        # nothing downloaded: no pretrained weights, no hub
        assert not re.search(r"from_pretrained|pretrained=True|weights=(?!None)\w", source), path.name
        assert "print(" in source and "assert " in source, path.name


# What each library's models need beside the README's install (transformers is a test extra, always there).
NEEDS = {"torchvision": ("requires_torchvision",), "timm": ("requires_timm", "requires_torchvision"),
         "diffusers": ("requires_diffusers",), "transformers": ()}


def runnable(path: Path) -> bool:
    return all(requirement_met(name) for name in NEEDS[path.name.split("_", 1)[0]])


def with_marks(path: Path):
    return pytest.param(path, marks=[getattr(pytest.mark, name) for name in NEEDS[path.name.split("_", 1)[0]]],
                        id=path.stem)


@pytest.mark.slow  # the chosen model's extraction and its modules' checks: ~1-3 minutes on 2 cores (docs/zoo.md)
@pytest.mark.parametrize("target", [with_marks(path) for path in chosen(candidates=[p for p in zoo() if runnable(p)])])
def test_a_zoo_model_extracts_and_every_module_passes_its_check(target, tmp_path):
    proc = harvest("extract", str(target), "-o", "out", "--device", "cpu", "-q", cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    out = tmp_path / "out"
    found = kernels(json.loads((out / "manifest.json").read_text()))
    assert found
    assert all(k["module"] for k in found), [(k["name"], k["standalone_reason"]) for k in found if not k["module"]]

    def check(kernel: dict):
        programs = 1
        for size in (kernel.get("recorded") or {}).get("grid") or ():
            programs *= int(size)
        shrink = ["--shrink", str(SHRINK)] if programs > SHRINK_ABOVE else []
        module = out / kernel["module"]
        command = [sys.executable, str(module), "--check", *shrink]
        return kernel, run_command(command, module.parent, dict(os.environ, TRITON_INTERPRET="1"), 600)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(check, found))
    failed = [f"{k['module']}:\n{p.stdout[-2000:]}{p.stderr[-1500:]}" for k, p in results if p.returncode != 0]
    assert not failed, f"{len(failed)} of {len(found)} modules fail:\n" + "\n".join(failed)
    for kernel, proc in results:
        assert "(recorded inputs)" in proc.stdout and "NOT COMPARED" not in proc.stdout, proc.stdout
        reference = kernel["reference"]
        if reference["coverage"] == "full":
            continue
        # a kernel without a full reference says why for each output it does not compute, and its check says so too
        missing = {output: why for output, why in reference["outputs"].items() if why != "compared"}
        assert missing and all(why.strip() for why in missing.values()), (kernel["module"], reference)
        for output, why in missing.items():
            if not why.startswith("scratch: "):
                assert f"{output}: reference: not computed ({why})" in proc.stdout, (kernel["module"], output, proc.stdout)
