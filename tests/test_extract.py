"""`harvest extract` end to end on the CPU: acceptance, determinism, replay, no-clobber, artifacts as targets.

No mocks: targets run in a real capture child through Inductor's CPU Triton backend, and every generated module
is run as a user runs it (`TRITON_INTERPRET=1 python module.py --check`, a subprocess). The two example
extractions are module-scoped: each runs once per session and the tests below share (and never modify) them.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import EXAMPLES, FIXTURES, ROOT, assert_same_tree, harvest, kernels, run_check, tree  # noqa: F401

SQUARE_OUTPUT_CODE = FIXTURES / "torch-2.13.0+cpu_triton-3.9.0" / "square_square" / "graph_000.py"
ARTIFACTS = {
    "torch_compile_debug": (FIXTURES / "artifacts" / "torch_compile_debug", 1),
    "torch_trace": (FIXTURES / "artifacts" / "torch_trace", 11),
    "torch_trace_log": (FIXTURES / "artifacts" / "torch_trace" / "dedicated_log_torch_trace_small_model.log", 11),
    "output_code.py": (SQUARE_OUTPUT_CODE, 1),
}


def extract_example(factory, name: str) -> tuple[subprocess.CompletedProcess, Path]:
    cwd = factory.mktemp(name)
    proc = harvest("extract", str(EXAMPLES / f"{name}.py"), "-o", "out", cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, cwd / "out"


@pytest.fixture(scope="module")
def square_square(tmp_path_factory):
    return extract_example(tmp_path_factory, "square_square")


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    return extract_example(tmp_path_factory, "small_model")


# ---------------------------------------------------------------- acceptance on the CPU


def test_square_square_is_one_fused_kernel_that_checks(square_square):
    proc, out = square_square
    assert "CPU" in proc.stderr and "Triton" in proc.stderr  # says plainly that it took the CPU Triton path
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["mode"] == "cpu-triton"
    (kernel,) = kernels(manifest)  # torch.square(torch.square(x)): ONE Triton kernel
    assert kernel["kind"] == "pointwise" and kernel["standalone_reason"] is None
    assert kernel["fusion"]["op_counts"] == {"pow": 2}, kernel["fusion"]  # both squares fused into it
    assert (out / "raw" / "g0_inference" / "output_code.py").exists()
    module = out / kernel["module"]
    check = run_check(module)
    assert check.returncode == 0, check.stdout + check.stderr
    assert " ok " in check.stdout and "not checked" not in check.stdout, check.stdout
    assert "under the Triton interpreter" in check.stdout  # says what it does before a silent minute of numpy


def test_small_model_forward_and_backward_every_kernel_checks(small_model):
    _, out = small_model
    manifest = json.loads((out / "manifest.json").read_text())
    roles = [graph["role"] for graph in manifest["graphs"]]
    assert roles.count("forward") == 1 and roles.count("backward") == 1, roles
    every = kernels(manifest)
    kinds = {kernel["kind"] for kernel in every}
    assert {"pointwise"} < kinds and kinds <= {"pointwise", "reduction", "persistent_reduction"}, kinds
    skipped = [(kernel["name"], kernel["standalone_reason"]) for kernel in every if kernel["standalone_reason"]]
    assert not skipped, f"kernels not made standalone: {skipped}"
    assert len(every) >= 11, f"{len(every)} kernels; torch 2.13 CPU gives 4 forward + 7 backward"
    modules = sorted(out / kernel["module"] for kernel in every)
    assert len(set(modules)) == len(every)
    assert sorted(out.glob("g*/*.py")) == modules  # exactly the manifest's modules were written

    with ThreadPoolExecutor(max_workers=2) as pool:
        checks = dict(zip(modules, pool.map(run_check, modules)))
    failed = {m.relative_to(out).as_posix(): c.stdout + c.stderr for m, c in checks.items() if c.returncode != 0}
    assert not failed, f"{len(failed)} of {len(modules)} modules failed --check: {failed}"
    for module, check in checks.items():
        assert " ok " in check.stdout, f"{module.name}: no output was checked:\n{check.stdout}"
        assert "not checked" not in check.stdout, f"{module.name}: an output went unchecked:\n{check.stdout}"


def test_a_config_edit_is_named_and_the_record_compares_within_tolerance(small_model, tmp_path):
    """The module keeps the config its record was made with (RECORD_CONFIG). Unedited, the record compares bit for
    bit; with another block size (another config may add a reduction's values in another order) --check names the
    change and the record compares within the dtype's tolerance, and the kernel still passes."""
    _, out = small_model
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    module = next(m for m in sorted(copy.glob("g*/*.py")) if "'BLOCK_ROWS': " in m.read_text())  # a reduction
    text = module.read_text()
    config = re.search(r"^CONFIG = (\{.*\})", text, re.M)
    assert f"RECORD_CONFIG = {config.group(1)}  # CONFIG as the record was made" in text
    before = run_check(module)
    assert before.returncode == 0 and "recorded: ok" in before.stdout and "bit for bit" in before.stdout, before.stdout
    assert "CONFIG is not" not in before.stdout
    block, size = "BLOCK_ROWS", ast.literal_eval(config.group(1))["BLOCK_ROWS"]
    edited = config.group(1).replace(f"'{block}': {size}", f"'{block}': {size * 2}", 1)
    module.write_text(text.replace(f"CONFIG = {config.group(1)}", f"CONFIG = {edited}", 1))
    after = run_check(module)
    assert after.returncode == 0, after.stdout + after.stderr
    assert f"CONFIG is not the one the record was made with ({block} {size} -> {size * 2})" in after.stdout
    recorded = [line for line in after.stdout.splitlines() if ": recorded: " in line]
    assert recorded and all("ok (" in line and "rtol=" in line for line in recorded), after.stdout


def test_small_model_kernels_take_no_parameter_they_overwrite(small_model):
    """One size, one edit (issue 19 part 3): a size the kernel was compiled with is a real parameter or one line of
    the body that says why it is fixed, never a parameter the body assigns. The checks above ran these modules."""
    from test_fixed_sizes import KERNEL_REGION, overwritten_params

    _, out = small_model
    texts = {k["module"]: (out / k["module"]).read_text() for k in kernels(json.loads((out / "manifest.json").read_text()))}
    assert {module: overwritten_params(text) for module, text in texts.items() if overwritten_params(text)} == {}
    fixed = [module for module, text in texts.items() if "# fixed: " in KERNEL_REGION.search(text).group(1)]
    assert len(fixed) >= 7, fixed  # the persistent reductions' row length, as Inductor compiled it


# ---------------------------------------------------------------- determinism and replay


def test_same_target_twice_gives_identical_files(square_square, tmp_path):
    """Same target, same relative -o, another fresh directory: every file byte-identical, manifest included."""
    _, first = square_square
    proc = harvest("extract", str(EXAMPLES / "square_square.py"), "-o", "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_same_tree(first, tmp_path / "out")


@pytest.mark.slow  # a second small-model capture, ~20 s
def test_small_model_twice_gives_identical_files(small_model, tmp_path):
    """Two graphs, provenance and autotune winners: every file byte-identical across two runs too."""
    _, first = small_model
    proc = harvest("extract", str(EXAMPLES / "small_model.py"), "-o", "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_same_tree(first, tmp_path / "out")


@pytest.mark.parametrize("example", ["square_square", "small_model"])
def test_replay_reproduces_identical_files(request, tmp_path, example):
    """`harvest extract OUT` (in place) and `harvest extract OUT/raw -o OTHER` give the same files, without a run."""
    _, original = request.getfixturevalue(example)
    shutil.copytree(original, tmp_path / "out")
    in_place = harvest("extract", "out", cwd=tmp_path)
    assert in_place.returncode == 0, in_place.stderr
    assert "reading artifact" in in_place.stderr and "running on" not in in_place.stderr
    assert_same_tree(original, tmp_path / "out")

    from_raw = harvest("extract", "out/raw", "-o", "other", "-q", cwd=tmp_path)
    assert from_raw.returncode == 0, from_raw.stderr
    assert_same_tree(original, tmp_path / "other")


# ---------------------------------------------------------------- no-clobber


def test_edited_module_is_kept_and_force_backs_it_up(square_square, tmp_path):
    _, original = square_square
    out = tmp_path / "out"
    shutil.copytree(original, out)
    (kernel,) = kernels(json.loads((out / "manifest.json").read_text()))
    module = out / kernel["module"]
    generated = module.read_bytes()
    edited = generated + b"\n# tuned by hand: XBLOCK 2048\n"
    module.write_bytes(edited)

    # Re-extract (from its raw capture: a run gives the same files, test_same_target_twice... shows it):
    # the edited module is left alone, and the output says so.
    proc = harvest("extract", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = " ".join((proc.stdout + proc.stderr).split())
    assert f"kept your edited {module.relative_to(tmp_path).as_posix()}" in said, said
    assert module.read_bytes() == edited
    assert not list(module.parent.glob("*.bak*"))

    # --force replaces it and keeps the edited version as a .bak.
    proc = harvest("extract", "out", "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert module.read_bytes() == generated
    (backup,) = module.parent.glob(module.name + ".bak*")
    assert backup.read_bytes() == edited
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "saved your edited version as" in said and backup.name in said, said

    # Once it is what harvest writes again, a plain re-extraction leaves the directory as it is.
    before = tree(out)
    proc = harvest("extract", "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert tree(out) == before


def test_modules_no_longer_produced_are_removed_unless_edited(tmp_path):
    """Re-extract another target into the same directory: unedited stale modules go, an edited one stays."""
    out = tmp_path / "out"
    proc = harvest("extract", str(ARTIFACTS["torch_trace"][0]), "-o", "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    old_modules = sorted(p.relative_to(out).as_posix() for p in out.glob("g*/*.py"))
    assert len(old_modules) == 11, old_modules
    edited = out / "g0_forward" / "gelu_kernel.py"
    assert edited.exists(), old_modules
    edited.write_text(edited.read_text() + "\n# my change\n")

    proc = harvest("extract", str(SQUARE_OUTPUT_CODE), "-o", "out", cwd=tmp_path)
    assert proc.returncode == 7 and "holds the extraction of" in proc.stderr, proc.stderr  # another target's: refused
    proc = harvest("extract", str(SQUARE_OUTPUT_CODE), "-o", "out", "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    left = sorted(p.relative_to(out).as_posix() for p in out.glob("g*/*.py"))
    assert left == ["g0_forward/gelu_kernel.py", "g0_inference/square_square_kernel.py"], left
    assert edited.read_text().endswith("# my change\n")
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "kept your edited out/g0_forward/gelu_kernel.py" in said, said
    assert not (out / "g1_backward").exists()  # emptied directories go too
    assert sorted(p.name for p in (out / "raw").iterdir()) == ["capture.json", "g0_inference"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [k["name"] for k in kernels(manifest)] == ["triton_poi_fused_pow_0"]


# ---------------------------------------------------------------- artifacts as targets


@pytest.mark.parametrize("artifact", sorted(ARTIFACTS))
def test_artifact_target_extracts_without_running(tmp_path, artifact):
    path, expected = ARTIFACTS[artifact]
    proc = harvest("extract", str(path), "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "reading artifact" in proc.stderr and "running on" not in proc.stderr, proc.stderr
    out = tmp_path / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["mode"] == "artifact"
    every = kernels(manifest)
    assert len(every) == expected, [k["name"] for k in every]
    assert all(kernel["module"] and (out / kernel["module"]).exists() for kernel in every), every
    for graph in manifest["graphs"]:
        assert (out / graph["raw"]).exists()
    if artifact == "output_code.py":
        assert (out / "raw" / "g0_inference" / "output_code.py").read_bytes() == SQUARE_OUTPUT_CODE.read_bytes()
        check = run_check(out / every[0]["module"])
        assert check.returncode == 0, check.stdout + check.stderr
        assert " ok " in check.stdout, check.stdout


# ---------------------------------------------------------------- the lean module (issue 19)


def _module_sources(out: Path) -> dict[str, str]:
    manifest = json.loads((out / "manifest.json").read_text())
    return {k["module"]: (out / k["module"]).read_text() for k in kernels(manifest) if k["module"]}


def test_a_module_holds_its_kernel_and_the_harness_is_written_once(small_model, square_square):
    """square_square's module fits on a screen, no small-model module passes 200 lines, the kernel is the first
    code after the imports, and no block of 6 lines outside the kernels is repeated between two modules (the harness
    holds those)."""
    sources = {**_module_sources(small_model[1]), **_module_sources(square_square[1])}
    assert len(sources["g0_inference/square_square_kernel.py"].splitlines()) <= 100
    assert max(len(text.splitlines()) for text in sources.values()) <= 200, {p: len(t.splitlines()) for p, t in sources.items()}
    for path, text in sources.items():
        after_header = text[text.index('"""', 3) + 3 :]
        code = [line for line in after_header.splitlines() if line and not line.startswith(("import ", "from ", "sys."))]
        assert code[0].startswith("# >>> kernel"), (path, code[:3])
    for out in (small_model[1], square_square[1]):
        assert (out / "harness.py").is_file()
        manifest = json.loads((out / "manifest.json").read_text())
        assert "harness.py" in manifest["generated_files"]
    seen: dict[tuple[str, ...], str] = {}
    for path, text in sorted(_module_sources(small_model[1]).items()):
        # Outside the kernel, six lines in a row (blank lines skipped) are never the same in two modules. (Two kernels
        # of one shape share their prologue lines, which are their own code, as Inductor wrote it; two kernels fused
        # from the same user lines list the same source lines in their headers.)
        begin = text.index("\n", text.index("# >>> kernel")) + 1  # the kernel region's first line names its kernel
        head = [line for line in text[:begin].splitlines() if not line.startswith("    ")]  # the header's source lines aside
        for outside in (head, text[text.index("# <<< kernel") :].splitlines()):
            lines = [line.strip() for line in outside if line.strip()]
            for start in range(len(lines) - 5):
                block = tuple(lines[start : start + 6])
                assert seen.setdefault(block, path) == path, f"{path} repeats 6 lines of {seen[block]}: {block}"


def test_no_generated_file_needs_a_private_torch_module(small_model):
    """Inductor's triton_helpers come from the harness, which carries harvest's own versions of the ones the kernels
    call: nothing harvest writes (raw/ aside: the capture as it was) names torch._inductor."""
    out = small_model[1]
    written = [p for p in out.rglob("*") if p.is_file() and "raw" not in p.relative_to(out).parts]
    assert not [p.relative_to(out).as_posix() for p in written if b"torch._inductor" in p.read_bytes()]
    assert "from harness import Tensor, main, triton_helpers" in (out / "g0_forward" / "softmax_kernel.py").read_text()
    harness = (out / "harness.py").read_text()
    assert "def helper_max2(" in harness and "def helper_any(" in harness and "def helper_welford(" not in harness


def test_one_size_edited_in_arguments_is_the_whole_edit(square_square, tmp_path):
    """Change the problem size in ARGUMENTS alone (both views' shape and the size scalar): the storages follow, the
    record no longer fits and is set aside, and --check runs the kernel on made-up inputs against the reference."""
    out = tmp_path / "edited"
    shutil.copytree(square_square[1], out)
    module = out / "g0_inference" / "square_square_kernel.py"
    text = module.read_text()
    edited = text.replace("Tensor((1000, 1000), (1000, 1), torch.float32", "Tensor((37, 29), (29, 1), torch.float32")
    edited = edited.replace('"n_elements": 1000000,', '"n_elements": 1073,')
    assert edited.count("(37, 29)") == 2 and '"n_elements": 1073,' in edited, "the module's ARGUMENTS changed shape"
    module.write_text(edited)
    check = run_check(module)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "holds other byte ranges than ARGUMENTS" in check.stdout
    assert "reference: ok (1073 values" in check.stdout, check.stdout


def test_packed_modules_check_from_an_empty_directory(small_model, tmp_path):
    """`harvest pack` of three kernels: one file each (with its record beside it) that imports only torch and
    triton, and passes --check when it is all there is in a directory."""
    out = small_model[1]
    chosen = ["g0_forward/layer_norm_fwd_kernel.py", "g0_forward/softmax_kernel.py", "g1_backward/gelu_bwd_kernel.py"]
    for index, module in enumerate(chosen):
        made = tmp_path / f"made{index}"
        made.mkdir()
        done = harvest("pack", str(out / module), "-o", str(made / "kernel.py"), cwd=made)
        assert done.returncode == 0, done.stderr
        empty = tmp_path / f"empty{index}"
        empty.mkdir()
        for path in made.iterdir():
            shutil.copy(path, empty / path.name)
        text = (empty / "kernel.py").read_text()
        assert "from harness" not in text and "torch._inductor" not in text
        check = run_check(empty / "kernel.py")
        assert check.returncode == 0, check.stdout + check.stderr
        assert "recorded: ok" in check.stdout and "reference: ok" in check.stdout, check.stdout
