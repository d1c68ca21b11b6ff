"""The committed showcase extractions (extracted/, made on an H200) are exactly what the code produces from their raw
captures, and read the way the naming scheme promises."""

import io
import json
import re
import tokenize
from pathlib import Path

import pytest
from conftest import ROOT, SHOWCASE_TOOLCHAIN, skip_unless

from harvest.api import extract
from harvest.ptx import ptx_command
from harvest.twin.command import twin_command

# Under extracted/h200/ so that `harvest extract examples/<ex>.py` (default extracted/<ex>) never overwrites them.
SHOWCASES = sorted(p.parent for p in (ROOT / "extracted/h200").glob("*/manifest.json"))
INDUCTOR_NAMES = re.compile(r"\b(tmp\d+|in_ptr\d+|out_ptr\d+|in_out_ptr\d+|xnumel|XBLOCK|R0_BLOCK)\b")


def _files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_showcases_exist_and_come_from_a_gpu():
    assert {p.name for p in SHOWCASES} >= {"square_compile", "square_square", "pytorch_square", "small_model", "dynamic_shapes"}
    for showcase in SHOWCASES:
        manifest = json.loads((showcase / "manifest.json").read_text())
        assert manifest["mode"] == "cuda" and manifest["gpu"], showcase
        assert "device_str='cuda'" in (showcase / manifest["graphs"][0]["raw"]).read_text()


@pytest.mark.parametrize("showcase", SHOWCASES, ids=lambda p: p.name)
def test_replaying_the_raw_capture_gives_identical_files(showcase, tmp_path):
    """extract from raw/, then the steps the showcase had: `harvest twin` when its kernels have twins."""
    out = tmp_path / showcase.name
    extract(showcase / "raw", out)
    manifest = json.loads((showcase / "manifest.json").read_text())
    if any("twin" in k for g in manifest["graphs"] for k in g["kernels"]):
        skip_unless("requires_nvcc")  # the showcase's twins were compiled by nvcc
        twin_command(out)
    # then `harvest ptx` for the kernels whose PTX the showcase holds, when this machine has the same compilers
    compiled = [(k["module"], k["ptx"]) for g in manifest["graphs"] for k in g["kernels"] if "ptx" in k]
    for module, ptx in compiled:
        recorded = ptx["toolchain"]
        assert recorded == SHOWCASE_TOOLCHAIN, recorded
        skip_unless("requires_showcase_toolchain")
        run = ptx_command(out / module, ptx["arch"])
        assert not run.errors, run.errors
    assert _files(out) == _files(showcase)


@pytest.mark.parametrize("showcase", SHOWCASES, ids=lambda p: p.name)
def test_no_inductor_names_left_in_the_kernels(showcase):
    manifest = json.loads((showcase / "manifest.json").read_text())
    modules = [k["module"] for g in manifest["graphs"] for k in g["kernels"] if k["module"]]
    assert modules
    for module in modules:
        source = (showcase / module).read_text()
        # Names in code only: the docstring's name table and the reasons in strings quote Inductor's names on purpose.
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        names = {t.string for t in tokens if t.type == tokenize.NAME}
        leftovers = sorted(n for n in names if INDUCTOR_NAMES.fullmatch(n))
        assert not leftovers, f"{module}: {leftovers}"


def test_the_readme_shows_the_square_square_kernel_as_harvest_writes_it():
    """The kernel in README.md is the committed showcase's, line for line (it once left out Inductor's size line)."""
    readme = (ROOT / "README.md").read_text()
    shown = re.search(r"```python\n(@triton\.jit\n.*?)```", readme, re.S).group(1)
    module = (ROOT / "extracted/h200/square_square/g0_inference/square_square_kernel.py").read_text()
    written = re.search(r"(@triton\.jit\n.*?)# <<< kernel", module, re.S).group(1)
    assert shown == written
