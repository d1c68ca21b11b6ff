"""CUDA twins run on the CPU: `<kernel>_twin.py --check --emulate` (harvest.twin.emulate) compiles each twin's .cu
and launcher with g++ against harvest's CUDA emulation (a block's threads as threads, barriers for __syncthreads
and warp shuffles, a process per block for a cooperative launch), and the twin harness's own check() compares the
outputs with the run's record and the eager reference.

What the GPU would run is what runs here, instruction for instruction in C++; the emulation gives no timing and
none of the GPU's memory model beyond its barriers, so every twin is also run on the H200 (scripts/gpu/parts/twins.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, extraction_of, harvest

from harvest.imports import import_file
from harvest.twin import NoTwin, read_module, translate
from harvest.twin.emulate import emulated_launch

pytestmark = [pytest.mark.requires_nvcc, pytest.mark.requires_gxx]  # the emulation needs g++ and the CUDA headers


def extract_with_twins(factory, example: str) -> Path:
    """EXAMPLE extracted on the CPU path, then `harvest twin` (its twin_harness.py and twin modules written)."""
    out = extraction_of(EXAMPLES / example, factory)  # a copy of the session's one extraction of it
    done = harvest("twin", str(out), "--no-compile", "-q", cwd=out.parent)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def scans(tmp_path_factory) -> Path:
    return extract_with_twins(tmp_path_factory, "models/scans.py")


@pytest.fixture(scope="module")
def cooperative(tmp_path_factory) -> Path:
    return extract_with_twins(tmp_path_factory, "models/cooperative.py")


@pytest.fixture(scope="module")
def small_model(tmp_path_factory) -> Path:
    return extract_with_twins(tmp_path_factory, "small_model.py")


def run_twin(extraction: Path, module: str, tmp_path: Path, edit: tuple[str, str] | None = None, launches=None):
    """(check()'s verdict, what it printed) for the twin of OUT/<module> run by the emulation, `edit` applied to its
    .cu first; the launch appended to `launches`."""
    twin = translate(read_module((extraction / module).read_text(encoding="utf-8"), module))
    cuda = twin.cuda
    if edit is not None:
        assert edit[0] in cuda, edit[0]
        cuda = cuda.replace(*edit)
    harness = import_file(extraction / "twin_harness.py", "twin_harness")
    graph, kernel_file = module.split("/")
    namespace = {"__file__": str(extraction / graph / "twin" / (kernel_file[:-3] + "_twin.py")),
                 "KERNEL_FILE": kernel_file, "PARAMS": list(twin.params)}
    launch = emulated_launch(cuda, harness.LAUNCH_HELPERS, twin.launcher, twin.declaration, tmp_path / "build")
    if launches is not None:
        launches.append(launch)
    printed = io.StringIO()
    sys.path.insert(0, str(extraction))
    try:
        with contextlib.redirect_stdout(printed):
            ok = harness.Twin(namespace).check(device="cpu", launch=launch)
    finally:
        sys.path.remove(str(extraction))
    return ok, printed.getvalue()


def kernel_modules(extraction: Path) -> list[str]:
    return sorted(str(p.relative_to(extraction)) for p in extraction.glob("g*/*.py"))


def test_every_scan_twin_matches_the_record_and_the_reference_on_the_emulated_gpu(scans, tmp_path):
    """The seven scan twins (warp tiles with a carry, block tiles, Inductor's looped scan with its own carry, scans
    beside an argmax and a sum) and the two pointwise ones: every output compared, recorded and reference."""
    modules = kernel_modules(scans)
    assert len(modules) == 9
    for module in modules:
        ok, printed = run_twin(scans, module, tmp_path)
        assert ok, f"{module}:\n{printed}"
        assert "recorded: ok" in printed and "reference: ok" in printed, printed


def test_a_cooperative_twin_splits_its_rows_over_blocks_that_meet_at_a_grid_barrier(cooperative, tmp_path):
    """On the emulated GPU (16 SMs, a block each) the launcher splits var_mean's 4 rows of 16384 over 2 blocks each
    and the mean's one row of 65536 over 8: cooperative launches, a process per block, and the outputs match."""
    for module in ("g0_inference/var_mean_sum_amax_kernel.py", "g0_inference/mul_abs_mean_kernel.py"):
        launches = []
        ok, printed = run_twin(cooperative, module, tmp_path, launches=launches)
        assert ok, f"{module}:\n{printed}"
        assert launches[0].cooperative() >= 1, module  # the split ran: its launches were cooperative


def test_the_emulation_catches_a_twin_that_skips_its_grid_barrier_or_its_carry(cooperative, scans, tmp_path):
    """The check can fail: without the grid barrier a block combines partials its peers have not written (the
    workspace is fresh memory), and a warp scan that drops the tiles before gets the second tile of a row wrong."""
    ok, printed = run_twin(cooperative, "g0_inference/mul_abs_mean_kernel.py", tmp_path,
                           edit=("if (splits > 1) cooperative_groups::this_grid().sync();", "(void)splits;"))
    assert not ok and "differ" in printed, printed
    ok, printed = run_twin(scans, "g0_forward/cumsum_sigmoid_cumprod_kernel.py", tmp_path,
                           edit=("if (has_carry) value = combine(carry, value);", "(void)has_carry;"))
    assert not ok and "differ" in printed, printed


def test_the_small_models_twins_match_on_the_emulated_gpu(small_model, tmp_path):
    """The classic paths (pointwise with 16-byte accesses, warp-per-row and block-per-row reductions, Welford,
    column sums, mix-order) run too: every twin of the small model passes check()."""
    checked = 0
    for module in kernel_modules(small_model):
        try:
            translate(read_module((small_model / module).read_text(encoding="utf-8"), module))
        except NoTwin:
            continue
        ok, printed = run_twin(small_model, module, tmp_path)
        assert ok, f"{module}:\n{printed}"
        checked += 1
    assert checked >= 8, checked


def test_a_split_scan_twin_scans_a_row_split_over_blocks_on_the_emulated_gpu(tmp_path):
    """The H200's split cumsum (its capture replayed; no launch data, so made-up inputs against the eager reference),
    its row cut to 50000 values so that the emulation is quick: split over 16 blocks that meet at a grid barrier."""
    from conftest import CUDA_FIXTURES, ROOT

    source = tmp_path / "scans"
    shutil.copytree(CUDA_FIXTURES / "recorded" / "scans", source)
    out = tmp_path / "out"
    assert harvest("extract", str(source), "-o", str(out), "-q", cwd=ROOT).returncode == 0
    assert harvest("twin", str(out), "--no-compile", "-q", cwd=ROOT).returncode == 0
    module = out / "g0_forward" / "cumsum_kernel.py"
    text = module.read_text(encoding="utf-8")
    for old, new in (("Tensor((1048576,), (1,), torch.float32)", "Tensor((50000,), (1,), torch.float32)"),
                     ("Tensor((1048576,), (1,), torch.float32, zeros=True)", "Tensor((50000,), (1,), torch.float32, zeros=True)"),
                     ('"n_cols": 1048576,', '"n_cols": 50000,')):
        assert old in text, old
        text = text.replace(old, new)
    module.write_text(text, encoding="utf-8")
    launches = []
    ok, printed = run_twin(out, "g0_forward/cumsum_kernel.py", tmp_path, launches=launches)
    assert ok and "reference: ok (50000 values" in printed, printed
    assert launches[0].cooperative() >= 1


def test_a_twin_module_checks_on_the_cpu_with_emulate_and_refuses_to_time_there(scans):
    """`python <graph>/twin/<kernel>_twin.py --check --emulate`, as a user runs it on a machine without a GPU: the
    twin built by g++ and checked; --bench --emulate is refused in one line (the emulation gives no timing)."""
    twin_module = scans / "g0_forward" / "twin" / "cumsum_kernel_twin.py"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    done = subprocess.run([sys.executable, str(twin_module), "--check", "--emulate"], capture_output=True, text=True,
                          cwd=scans, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cumsum_kernel: emulated on the CPU" in done.stdout and "out_ptr: recorded: ok" in done.stdout
    assert (scans / "g0_forward" / "twin" / "build" / "cumsum_kernel" / "emulated").is_dir()
    timed = subprocess.run([sys.executable, str(twin_module), "--bench", "--emulate"], capture_output=True, text=True,
                           cwd=scans, env=env, timeout=600)
    assert timed.returncode == 2 and timed.stderr.strip() == "--emulate checks a twin; it gives no timing (--bench needs a GPU)"


def test_a_reduction_whose_accumulator_is_cast_before_its_reduction_gets_a_twin_that_matches(tmp_path_factory, tmp_path):
    """examples/dynamic_shapes.py's softmax reads `as_i8 = any_true_acc.to(tl.int8)` after its loop and reduces that
    (torch's isfinite check): the cast goes into the reduction, applied to each of a thread's accumulator copies, as
    Triton applies it to each slot before reducing; the twin passes its check."""
    out = extract_with_twins(tmp_path_factory, "dynamic_shapes.py")
    twin = translate(read_module((out / "g0_inference/softmax_kernel.py").read_text(encoding="utf-8"), "softmax_kernel.py"))
    assert "hv::cast<int8_t>(any_true_acc_copies[0])" in twin.cuda
    ok, printed = run_twin(out, "g0_inference/softmax_kernel.py", tmp_path)
    assert ok and "inout_ptr: recorded: ok" in printed, printed


def test_bf16_twins_match_on_the_emulated_gpu(tmp_path_factory, tmp_path):
    """examples/models/bf16_mlp.py: twins of bfloat16 kernels include cuda_bf16.h, whose CUDA runtime declarations
    the emulation's launcher pieces must stand beside; every twin passes its check."""
    out = extract_with_twins(tmp_path_factory, "models/bf16_mlp.py")
    modules = kernel_modules(out)
    assert len(modules) == 5
    for module in modules:
        ok, printed = run_twin(out, module, tmp_path)
        assert ok, f"{module}:\n{printed}"


def test_emulate_says_in_one_line_when_threads_diverge_around_a_barrier_or_a_file_is_missing(scans, tmp_path):
    """A twin edited so that one thread skips a __syncthreads would misbehave on a GPU; the emulation does not wait
    for ever: after HV_EMULATED_BARRIER_S seconds it says so in one line and exits 1. A twin whose .cu is gone:
    one line, exit 2."""
    out = tmp_path / "scans"
    shutil.copytree(scans, out)
    cu = out / "g0_forward" / "twin" / "logcumsumexp_kernel.cu"
    text = cu.read_text(encoding="utf-8")
    barrier = "  __syncthreads();  // the previous tile's readers are done with `totals`"
    assert barrier in text
    cu.write_text(text.replace(barrier, "  if (threadIdx.x != 0) __syncthreads();"), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent), HV_EMULATED_BARRIER_S="2")
    twin_module = out / "g0_forward" / "twin" / "logcumsumexp_kernel_twin.py"
    done = subprocess.run([sys.executable, str(twin_module), "--check", "--emulate"], capture_output=True, text=True,
                          cwd=out, env=env, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip() == ("--emulate: threads of a block waited 2 s at a __syncthreads or a warp shuffle that the "
                                   "others never reached (the twin's threads diverge around it)"), done.stderr
    cu.unlink()
    gone = subprocess.run([sys.executable, str(twin_module), "--check", "--emulate"], capture_output=True, text=True,
                          cwd=out, env=env, timeout=600)
    assert gone.returncode == 2 and gone.stderr.count("\n") == 1, gone.stderr
    assert gone.stderr.startswith("--emulate: No such file or directory: ") and "logcumsumexp_kernel.cu" in gone.stderr
