"""harvest's own Inductor helpers (harvest/inductor_helpers.py) against torch's, bit for bit.

The same kernels (tests/helper_kernels.py) are built twice, once against each module of helpers, and run on the same
random inputs, rich in what the helpers' rules are about: NaNs, ties, 0.0 against -0.0, +-inf, rows that are all
-inf, empty Welford partials, negative integer operands. Under the interpreter (the default here) that checks the
semantics; on a GPU with TRITON_INTERPRET=0 the same test compares compiled kernels. The PTX test compiles a max2 and
a Welford reduction offline for sm_90 with each and wants the same normalised PTX. The last test extracts a target
whose kernel calls eleven of the helpers and checks it against the run's record (made with torch's), bit for bit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import helper_kernels
import pytest
import torch
from conftest import ROOT, harvest, run_check, tree_env
from conftest import kernels as manifest_kernels

from harvest import helper_blocks, interpret_shim
from harvest.ptx.text import instruction_mix, normalize_ptx

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET or not torch.cuda.is_available() else "cuda"
pytestmark = pytest.mark.requires_triton_runtime  # a GPU, or the interpreter (conftest turns it on by default)

SPECIAL = torch.tensor([float("nan"), 0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), 2.5])


@pytest.fixture(scope="module")
def kernels():
    interpret_shim.install()  # libdevice.exp under the interpreter (torch's helpers and ours call the same module)
    return {tag: helper_kernels.build(module, tag) for tag, module in helper_kernels.helper_modules().items()}


def tricky(shape, generator, special=0.3, ties=0.3):
    """Random float32 values where about `special` of them are NaN/+-0/+-1/+-inf/2.5 and `ties` repeat a few values."""
    values = torch.randn(shape, generator=generator)
    pick = torch.rand(shape, generator=generator)
    values = torch.where(pick < ties, torch.randint(-2, 3, shape, generator=generator).float(), values)
    specials = SPECIAL[torch.randint(0, len(SPECIAL), shape, generator=generator)]
    return torch.where(pick > 1 - special, specials, values).contiguous()


def as_dtype(values, dtype):
    """float32 test values in dtype: integers get NaN -> 3, +-inf -> +-7 and ties kept (values times 3)."""
    if dtype.is_floating_point:
        return values.to(dtype)
    return (torch.nan_to_num(values, nan=3.0, posinf=7.0, neginf=-7.0) * 3).to(dtype)


def bits(tensor):
    """The tensor's bytes as integers: NaN payloads and the sign of zero compare too."""
    return tensor.cpu().contiguous().view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()])


def assert_same_bits(kernels, name, grid, inputs, outputs, **constexprs):
    """Launch `name` from both helper modules on clones of `inputs` plus fresh `outputs`; every output bit-equal."""
    got = {}
    for tag, namespace in kernels.items():
        ins = [t.clone().to(DEVICE) if isinstance(t, torch.Tensor) else t for t in inputs]
        outs = [torch.zeros(shape, dtype=dtype, device=DEVICE) for shape, dtype in outputs]
        namespace[name][grid](*ins, *outs, **constexprs)
        got[tag] = outs
    for index, (ours, theirs) in enumerate(zip(got["harvest"], got["torch"])):
        differ = (bits(ours) != bits(theirs)).nonzero()
        assert len(differ) == 0, f"{name} output {index}: {len(differ)} values differ, first at {differ[0].tolist()}: harvest {ours.cpu()[tuple(differ[0])]!r}, torch {theirs.cpu()[tuple(differ[0])]!r}"
    return got["harvest"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_max2_min2_maximum_minimum(kernels, dtype):
    generator = torch.Generator().manual_seed(1)
    rows, cols = 12, 16
    x, y = tricky((rows, cols), generator), tricky((rows, cols), generator)
    y[0] = -x[0]  # 0.0 against -0.0 (and NaN against NaN) in both orders
    x, y = (as_dtype(t, dtype) for t in (x, y))
    out = assert_same_bits(kernels, "max_min_kernel", (rows,), [x, y],
                           [((rows,), dtype), ((rows,), dtype), ((rows, cols), dtype), ((rows, cols), dtype)], COLS=cols)
    if dtype.is_floating_point:  # what the rules say, not only that both agree
        row_has_nan = x.isnan().any(1)
        assert out[0].cpu().isnan().equal(row_has_nan) and out[1].cpu().isnan().equal(row_has_nan)
        assert out[2].cpu().isnan().equal(x.isnan() | y.isnan())


def test_max2_on_masked_rows(kernels):
    generator = torch.Generator().manual_seed(2)
    x = tricky((10, 64), generator)
    assert_same_bits(kernels, "max2_kernel", (3,), [x, 10], [((10,), torch.float32)], ROWS=4, COLS=64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_arg_max_min_keep_the_lowest_index_on_ties(kernels, dtype):
    generator = torch.Generator().manual_seed(3)
    rows, cols = 16, 16
    x = tricky((rows, cols), generator, special=0.25, ties=0.6)
    x[1] = float("nan")  # all NaN: index 0
    x[2] = 0.0
    x[2, 5:] = -0.0  # equal zeros of both signs: index 0
    x = as_dtype(x, dtype)
    out = assert_same_bits(kernels, "arg_kernel", (rows,), [x],
                           [((rows,), dtype), ((rows,), torch.int64), ((rows,), dtype), ((rows,), torch.int64)], COLS=cols)
    if dtype.is_floating_point:
        assert out[1][1].item() == 0 and out[1][2].item() == 0 and out[3][2].item() == 0
        first_nan = [int(row.isnan().nonzero()[0]) if row.isnan().any() else None for row in x]
        for row, index in enumerate(first_nan):
            if index is not None:  # a NaN wins, the first NaN of the row
                assert out[1][row].item() == index and out[3][row].item() == index


def test_any_and_prod(kernels):
    generator = torch.Generator().manual_seed(4)
    x = tricky((8, 16), generator, special=0.1) * 1.5
    x[3] = 1.0  # no value above 2: any is false
    assert_same_bits(kernels, "any_prod_kernel", (8,), [x], [((8,), torch.int8), ((8,), torch.float32)], COLS=16)


@pytest.mark.parametrize("r_numel", [37, 300])
def test_welford_reduce_and_welford(kernels, r_numel):
    generator = torch.Generator().manual_seed(5)
    rows = 6
    x = torch.randn(rows, r_numel, generator=generator) * 3 + 1
    x[1] = 2.0  # a constant row: m2 stays 0
    x[2, ::7] = float("inf")  # infinite values
    x[3, 5] = float("nan")
    out = assert_same_bits(kernels, "welford_kernel", (3,), [x, rows, r_numel],
                           [((rows,), torch.float32)] * 3, XBLOCK=2, RBLOCK=16)
    mean, m2, weight = (t.cpu() for t in out)
    assert weight.eq(r_numel).all()
    torch.testing.assert_close(mean[[0, 4, 5]], x[[0, 4, 5]].mean(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(m2[[0, 4, 5]] / r_numel, x[[0, 4, 5]].var(1, correction=0), rtol=1e-4, atol=1e-4)
    assert m2[1].item() == 0.0


def test_welford_combine_on_equal_infinite_means_and_empty_partials(kernels):
    generator = torch.Generator().manual_seed(6)
    n = 64
    a = torch.randn(n, 6, generator=generator).abs()
    a[:, [0, 3]] = tricky((n, 2), generator)
    a[:16, [0, 3]] = torch.randn(16, 2, generator=generator)
    a[:8, [2, 5]] = 0.0  # both partials empty
    a[8:16, 5] = 0.0  # the second one empty
    a[16:20, [0, 3]] = float("inf")  # equal infinite means
    a[20:24, 3] = a[20:24, 0]  # equal finite means
    out = assert_same_bits(kernels, "welford_combine_kernel", (n // 16,), [a], [((n, 3), torch.float32)], N=16)[0].cpu()
    assert not out[:8].isnan().any()
    if helper_blocks.torch_release(torch.__version__) >= (2, 13):  # Inductor guards equal means from torch 2.13 on
        assert out[16:20, 0].isinf().all() and not out[16:20, 1].isnan().any()
    else:
        assert out[16:20, 0].isnan().all()


@pytest.mark.parametrize("fast", [False, True])
def test_online_softmax_combine_and_reduce(kernels, fast):
    generator = torch.Generator().manual_seed(7)
    rows, r_numel = 6, 40
    x = tricky((rows, r_numel), generator, special=0.1)
    x[0] = torch.randn(r_numel, generator=generator)
    x[1] = float("-inf")  # a row of -inf: scales stay 1
    x[2] = torch.randn(r_numel, generator=generator) * 30  # large shifts
    out = assert_same_bits(kernels, "online_softmax_kernel", (rows,), [x, r_numel],
                           [((rows,), torch.float32), ((rows,), torch.float32)], RBLOCK=16, FAST=fast)
    row_max, row_sum = (t.cpu() for t in out)
    finite = [0, 2]
    torch.testing.assert_close(row_sum[finite], torch.exp(x[finite] - x[finite].amax(1, keepdim=True)).sum(1), rtol=1e-4, atol=1e-4)
    assert row_max[1].item() == float("-inf")


@pytest.mark.requires_newer_inductor_helpers
def test_integer_division_powers_and_exp(kernels):
    generator = torch.Generator().manual_seed(8)
    n = 64
    a = torch.randint(-50, 50, (n,), generator=generator, dtype=torch.int32)
    b = torch.randint(1, 9, (n,), generator=generator, dtype=torch.int32) * torch.where(torch.rand(n, generator=generator) < 0.5, -1, 1).int()
    e = torch.randint(0, 6, (n,), generator=generator, dtype=torch.int32)
    out = assert_same_bits(kernels, "pointwise_kernel", (n // 16,), [a, b, e],
                           [((n,), torch.int32)] * 3 + [((n,), torch.float32)] * 4, N=16)
    floor, remainder, power = (t.cpu() for t in out[:3])
    assert floor.equal(torch.div(a, b, rounding_mode="floor")) and remainder.equal(torch.remainder(a, b))
    assert power.equal(torch.tensor([int(x) ** int(k) for x, k in zip(a, e)], dtype=torch.int32))


def test_ptx_of_a_max2_and_a_welford_kernel_is_torchs(tmp_path):
    """Compiled offline (sm_90, no GPU), with harvest's helpers and with torch's: the same normalised PTX."""
    env = {k: v for k, v in tree_env().items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    env.update(TRITON_CACHE_DIR=str(tmp_path / "cache"), TRITON_DEFAULT_FP_FUSION="1")
    done = subprocess.run([sys.executable, str(Path(helper_kernels.__file__))], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    for kernel, ptx in json.loads(done.stdout).items():
        ours, theirs = ptx["harvest"], ptx["torch"]
        assert instruction_mix(ours) == instruction_mix(theirs), (kernel, instruction_mix(ours), instruction_mix(theirs))
        assert normalize_ptx(ours) == normalize_ptx(theirs), kernel


def test_a_capture_with_an_older_torch_gets_its_welford_combine():
    """Inductor's welford_combine guards equal means from torch 2.13 on; a harness for a 2.11 or 2.12 capture holds
    the unguarded form under the same name (checked bit for bit against torch 2.11 on the H200)."""
    assert "mean_1 == mean_2" in helper_blocks.helpers_source(["welford"], "2.13.0+cpu")
    assert "mean_1 == mean_2" in helper_blocks.helpers_source(["welford"], None)
    old = helper_blocks.helpers_source(["welford"], "2.11.0+cu130")
    assert "mean_1 == mean_2" not in old and "def helper_welford_combine(" in old and "_before_" not in old


def test_the_harness_carries_only_what_is_called_and_what_that_calls():
    assert helper_blocks.with_dependencies(["max2"]) == ["promote_to_tensor", "is_floating", "maximum", "max2"]
    assert helper_blocks.with_dependencies(["welford"]) == ["welford_combine", "welford"]
    assert helper_blocks.helpers_libdevice(["online_softmax_combine"]) == {"exp"}
    assert helper_blocks.helpers_libdevice(["max2", "welford", "any"]) == set()
    source = helper_blocks.helpers_source(["any"])
    assert "def helper_any(" in source and "def helper_max2(" not in source and "any=helper_any" in source
    compile(source, "<helpers>", "exec")


@pytest.mark.slow  # a capture and an interpreted check of a 2 x 4096 looped reduction, ~3 min on 2 cores
@pytest.mark.requires_interpreter
def test_an_extraction_needs_no_private_torch_module_and_matches_its_record(tmp_path):
    """tests/targets/helper_reductions.py: Welford, arg-max/min, max/min and any in one looped kernel. Its module
    imports triton_helpers from the harness, nothing harvest writes names torch._inductor, --check matches the record
    (Inductor's kernel with torch's helpers) bit for bit, and `harvest ptx` compiles it with the harness's helpers."""
    done = harvest("extract", str(ROOT / "tests" / "targets" / "helper_reductions.py"), "-o", "out", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    written = [p for p in out.rglob("*") if p.is_file() and "raw" not in p.relative_to(out).parts]
    assert not [p for p in written if b"torch._inductor" in p.read_bytes()]
    manifest = json.loads((out / "manifest.json").read_text())
    (kernel,) = [k for k in manifest_kernels(manifest) if k["module"]]
    module = out / kernel["module"]
    text = module.read_text()
    assert "from harness import Tensor, main, triton_helpers" in text
    calls = helper_blocks.helpers_called(text[text.index("# >>> kernel") : text.index("# <<< kernel")])
    assert calls >= {"welford_reduce", "welford", "maximum_with_index", "max_with_index", "minimum", "min2", "any"}
    harness_text = (out / "harness.py").read_text()
    assert all(f"def helper_{name}(" in harness_text for name in calls)
    assert "def helper_online_softmax_reduce(" not in harness_text  # only what the kernels call
    check = run_check(module)
    assert check.returncode == 0, check.stdout + check.stderr
    recorded = [line for line in check.stdout.splitlines() if "recorded:" in line]
    assert len(recorded) >= 5 and all("recorded: ok" in line and "bit for bit" in line for line in recorded), check.stdout
    ptx = harvest("ptx", str(module), "-q", cwd=tmp_path)
    assert ptx.returncode == 0, ptx.stdout + ptx.stderr
    (triton_ptx,) = (module.parent / "ptx").glob("*.triton.ptx")
    assert '.file\t2 "harness.py"' in triton_ptx.read_text() and "triton_helpers.py" not in triton_ptx.read_text()


WELFORD_FOLD = '''
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from harvest import inductor_helpers, interpret_shim
if sys.argv[1] == "torch":
    from torch._inductor.runtime import triton_helpers
else:  # harvest's copy as a 2.11 capture's harness holds it: no guard for equal means
    triton_helpers = inductor_helpers.for_torch("2.11.0+cu130", ["welford"])
if sys.argv[2] == "shim":
    interpret_shim.install()

@triton.jit
def welford_rows(x_ptr, w_ptr, out_ptr, R: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, R)[None, :]
    x = tl.load(x_ptr + row * R + cols)
    mean, m2, weight = triton_helpers.welford(x, x * 0.5, tl.load(w_ptr + row * R + cols), 1)
    one = tl.arange(0, 1)
    tl.store(out_ptr + row * 3 + one, mean)
    tl.store(out_ptr + row * 3 + 1 + one, m2)
    tl.store(out_ptr + row * 3 + 2 + one, weight)

g = torch.Generator().manual_seed(0)
x = torch.randn(6, 512, generator=g) * 100
x[1, ::7] = float("inf"); x[2, 3] = float("nan"); x[3] = 5.0; x[4, ::3] = -float("inf")
w = torch.randint(0, 4, (6, 512), generator=g).float()
w[5] = 0  # all partials empty
out = torch.zeros(6, 3)
welford_rows[(6,)](x, w, out, 512)
torch.save(out, sys.argv[3])
'''


@pytest.mark.parametrize("helpers", ["torch", "harvest_2_11"])
def test_the_shims_welford_fold_gives_the_interpreters_bits(tmp_path, helpers):
    """The shim folds a Welford reduction in numpy, one step at a time in the interpreter's order, instead of calling
    welford_combine on Triton tensors per column (an H200 var_mean kernel took 281 s under the interpreter): the
    same bits as the interpreter's own fold (NaN, infinities, equal means, empty partials), with and without the
    equal-means guard of torch 2.13."""
    script = tmp_path / "fold.py"
    script.write_text(WELFORD_FOLD)
    results = {}
    for mode in ("plain", "shim"):
        done = subprocess.run([sys.executable, str(script), helpers, mode, str(tmp_path / f"{mode}.pt")],
                              capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr[-3000:]
        results[mode] = torch.load(tmp_path / f"{mode}.pt")
    assert torch.equal(bits(results["plain"]), bits(results["shim"])), results
    assert results["shim"].isnan().any() and results["shim"][5, 2] == 0  # the special cases were reached


DEVICE_CALLS = '''
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from triton.runtime import interpreter
from torch._inductor.runtime import triton_helpers
from harvest import interpret_shim

patched = []  # each time the interpreter's own patching runs: which modules it patched tl.load on
patch_lang = interpreter._patch_lang
def counted(fn):
    langs = [v.__name__ for v in fn.__globals__.values() if v is tl or v is tl.core]
    patched.append(sorted(langs))
    return patch_lang(fn)
interpreter._patch_lang = counted
if sys.argv[1] == "shim":
    interpret_shim.install()

@triton.jit
def looped_max(x_ptr, out_ptr, R: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.full([BLOCK], float("-inf"), tl.float32)
    total = tl.zeros([BLOCK], tl.float32)  # tl.zeros: a @triton.jit function of triton.language.standard (sees tl.core)
    for start in range(0, R, BLOCK):
        x = tl.load(x_ptr + row * R + start + cols)
        acc = triton_helpers.maximum(acc, x)  # a @triton.jit helper, called at every step
        total += x
    tl.store(out_ptr + row * 2 + tl.arange(0, 1), tl.max(acc, 0)[None])
    tl.store(out_ptr + row * 2 + 1 + tl.arange(0, 1), tl.sum(total, 0)[None])

x = torch.randn(4, 256, generator=torch.Generator().manual_seed(0))
out = torch.zeros(4, 2)
for launch in range(2):  # each launch patches triton.language and puts it back afterwards
    looped_max[(4,)](x, out, 256, 16)
torch.save(out, sys.argv[2])
print(json.dumps(patched))
'''


def test_the_shim_has_the_interpreter_patch_triton_language_once_per_launch(tmp_path):
    """Each call of a @triton.jit function from a kernel (an Inductor helper in a loop, tl.zeros, tl.max, tl.sum) had
    the interpreter patch triton.language again (inspect.getmembers of tl, tl.tensor, tl.math): an H200 var_mean
    module's check 39 s -> 23 s without it. With the shim a launch patches `tl` once, and tl.core (which only
    triton.language's own functions see) at the first call of one of them; the outputs are the same bits."""
    script = tmp_path / "calls.py"
    script.write_text(DEVICE_CALLS)
    results, patched = {}, {}
    for mode in ("plain", "shim"):
        done = subprocess.run([sys.executable, str(script), mode, str(tmp_path / f"{mode}.pt")], capture_output=True,
                              text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr[-3000:]
        results[mode], patched[mode] = torch.load(tmp_path / f"{mode}.pt"), json.loads(done.stdout.splitlines()[-1])
    assert torch.equal(bits(results["plain"]), bits(results["shim"])), results
    x = torch.randn(4, 256, generator=torch.Generator().manual_seed(0))  # the script's input
    assert torch.equal(results["shim"][:, 0], x.max(1).values) and torch.allclose(results["shim"][:, 1], x.sum(1), atol=1e-4)
    calls_per_launch = 4 * (16 + 3) + 1  # 4 programs: 16 helper calls, tl.zeros, tl.max, tl.sum; and the launch's own
    assert len(patched["plain"]) >= 2 * calls_per_launch
    # the shim: per launch, the kernel's own patching of tl; tl.core only once (its patches outlive a launch)
    assert patched["shim"] == [["triton.language"], ["triton.language.core"], ["triton.language"]], patched["shim"]
