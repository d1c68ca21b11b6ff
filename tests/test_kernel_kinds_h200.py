"""Kernel kinds that only a GPU writes, replayed on this CPU from H200 captures (torch 2.11, triton 3.6; their raw/
in tests/fixtures/torch-2.11.0+cu130_triton-3.6.0/recorded, the launch data left out):

- autotune_mlp: max-autotune's matmul templates (bias, ReLU's backward fused in), whose tile sizes harvest lifts
  out of the kernel body into CONFIG, with the tile grid following them; and the bias gradients as split sums of a
  bfloat16 tensor, whose partials Inductor keeps in float32;
- user_kernel: a user-written @triton.jit kernel launched inside the compiled graph, kept as its user wrote it;
- encoder_norm_first: a pre-norm encoder layer whose dropout-add kernel computes a layer norm's mean and then the
  total of squared deviations, which it stores (the variance's total, not the mean's);
- cooperative: cooperative reductions (RSPLIT programs a row, meeting at a grid barrier), RSPLIT 64 and 16 on the
  H200's 132 SMs;
- fixed_config: a softmax and a GELU in one kernel whose config a choices handler fixed at compile time;
- conv_bmm_autotune: max-autotune with Triton as the only backend: two convolution templates (a 3x3 stem and a 1x1
  mix, their bias added by the next kernel) and six bmm templates, forward and backward.

The H200's own --check of these modules against their records is in docs/benchmarks.md."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CUDA_FIXTURES, ROOT, harvest, kernels, run_check

from harvest.bench.command import inductor_arguments, recorded_launches
from harvest.bench.sweep import INDUCTOR_MM_CONFIGS, SHARED_MEMORY, sweep_configs, sweep_space
from harvest.capture.record import read_params
from harvest.module.file import read_module_file
from harvest.parse import parse_output_code

RECORDED = CUDA_FIXTURES / "recorded"
MODELS = ("autotune_mlp", "user_kernel", "encoder_norm_first", "cooperative", "fixed_config", "conv_bmm_autotune")
TILES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> dict[str, tuple[dict, Path]]:
    found = {}
    for model in MODELS:
        source = tmp_path_factory.mktemp(model) / model
        shutil.copytree(RECORDED / model, source)
        out = source.parent / "out"
        done = harvest("extract", str(source), "-o", str(out), "-q", cwd=ROOT)
        assert done.returncode == 0, done.stderr
        found[model] = (json.loads((out / "manifest.json").read_text()), out)
    return found


def module_text(out: Path, manifest: dict, inductor_name: str) -> tuple[Path, str]:
    kernel = next(k for k in kernels(manifest) if k["name"] == inductor_name)
    path = out / kernel["module"]
    return path, path.read_text()


def test_every_kernel_of_the_mlp_and_the_encoder_has_a_full_reference(replayed):
    for model, count in (("autotune_mlp", 8), ("encoder_norm_first", 24)):
        manifest, _ = replayed[model]
        assert manifest["references"] == {"full": count, "partial": 0, "none": 0, "from_recorded_graph": count}


def test_a_template_module_takes_its_tiles_from_config_and_its_grid_follows_them(replayed):
    manifest, out = replayed["autotune_mlp"]
    templates = [k for k in kernels(manifest) if k["kind"] == "template"]
    assert [k["name"] for k in templates] == [
        "triton_tem_fused_addmm_t_0", "triton_tem_fused_addmm_t_2", "triton_tem_fused_mm_t_threshold_backward_0"]
    for kernel in templates:
        text = (out / kernel["module"]).read_text()
        module = read_module_file(text, kernel["module"])
        assert list(module.config)[:4] == list(TILES) and set(TILES) <= set(module.constexprs)
        assert not re.search(r"^\s+BLOCK_[MNK] : tl\.constexpr = \d+", module.region, re.M)  # not in the body any more
        sizes = dict(re.findall(r"^\s+([MNK]) = (\d+)$", module.region, re.M))
        assert f"EVEN_K : tl.constexpr = {sizes['K']} % BLOCK_K == 0" in module.region
        assert (f'grid = (triton.cdiv({sizes["M"]}, config["BLOCK_M"]) * triton.cdiv({sizes["N"]}, config["BLOCK_N"]), 1, 1)'
                in text)
        assert f"MATMUL = dict(M={sizes['M']}, N={sizes['N']}, K={sizes['K']}, dtype=torch.bfloat16)" in text
        # the grid of the tiles it was compiled with is the grid the H200 launched
        programs = -(-int(sizes["M"]) // module.config["BLOCK_M"]) * -(-int(sizes["N"]) // module.config["BLOCK_N"])
        assert kernel["recorded"]["grid"] == [programs, 1, 1]
        assert "the template config max-autotune picked" in text


def test_a_bf16_template_checks_under_the_interpreter_and_after_a_tile_edit(replayed, tmp_path):
    manifest, out = replayed["autotune_mlp"]
    path, text = module_text(out, manifest, "triton_tem_fused_addmm_t_2")  # (2048 x 2048) @ (2048 x 512)
    done = run_check(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "out_ptr: reference: ok (1048576 values, torch.bfloat16" in done.stdout
    # One edit of CONFIG is the whole change: other tiles (the grid and EVEN_K follow them). Under the interpreter a
    # check costs per tile step: these take as many as the recorded 64 x 128 x 128 (64 x 32 x 32: 16x, 2.5x the time).
    config = re.search(r"^CONFIG = (\{.*\})", text, re.M)
    edited = dict(ast.literal_eval(config.group(1)), BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=4, num_stages=3)
    path.write_text(text.replace(config.group(1), repr(edited)))
    done = run_check(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "out_ptr: reference: ok (1048576 values, torch.bfloat16" in done.stdout


@pytest.mark.parametrize("inductor_name, line", [
    ("triton_red_fused_sum_1", "out_ptr: reference: ok (512 values, torch.float32, rtol=0.0001, atol=0.000453, partials "
                               "sum-combined over dims [2] vs the whole reduction of 2048 values"),
    ("triton_per_fused_sum_2", "out_ptr: reference: ok (512 values, torch.bfloat16"),
])
def test_a_bf16_split_sum_binds_its_float32_partials(replayed, inductor_name, line):
    manifest, out = replayed["autotune_mlp"]
    path, _ = module_text(out, manifest, inductor_name)
    done = run_check(path)
    assert done.returncode == 0 and line in done.stdout, done.stdout + done.stderr


def test_the_variance_total_of_a_dropout_add_layer_norm_kernel(replayed):
    manifest, out = replayed["encoder_norm_first"]
    name = "triton_per_fused_add_native_dropout_native_layer_norm_transpose_view_6"
    path, text = module_text(out, manifest, name)
    # it sums x, divides by 512, then sums the squared deviations: it stores var * 512, not mean * 512
    assert "getitem_6_total = torch.ops.aten.mul.Tensor(getitem_6, 512)" in text
    # a value computed through a sum of 512 terms: compared with a tolerance that grows with them
    assert '"total_ptr": {"reduce": "through", "dims": [], "terms": 512, "expected": getitem_6_total}' in text
    assert "getitem_6 = var_mean_1[0]" in text
    done = run_check(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gt_ptr: reference: ok (1048576 values, torch.bool, bit for bit)" in done.stdout
    assert "total_ptr: reference: ok (2048 values" in done.stdout


def test_a_user_kernel_keeps_its_name_and_text_and_runs_on_its_recorded_grid(replayed):
    manifest, out = replayed["user_kernel"]
    kernel = next(k for k in kernels(manifest) if k["name"] == "scaled_relu_kernel_0")
    assert (kernel["kind"], kernel["standalone_reason"], kernel["module"]) == ("user", None, "g0_inference/scaled_relu_kernel.py")
    text = (out / kernel["module"]).read_text()
    module = read_module_file(text, kernel["module"])
    user_source = (ROOT / "examples/models/user_kernel.py").read_text()
    written = user_source[user_source.index("def scaled_relu_kernel"):user_source.index("\n\n\n", user_source.index("def scaled_relu_kernel"))]
    assert written in module.region  # as the user wrote it: name, parameters and body
    assert dict(module.config) == {"num_warps": 4, "num_stages": 3, "BLOCK": 1024}
    assert "    grid = (512, 1, 1)\n" in text and "the user's grid, as recorded in the run" in text
    assert "a user-written Triton kernel: no graph ops to compute it from (the record compares" in text
    assert list(module.arguments) == ["x_ptr", "out_ptr", "scale", "n"]
    # on the CPU there is no record of an H200 launch and no reference: the check says nothing was compared
    done = run_check(out / kernel["module"])
    assert done.returncode == 1 and "out_ptr: NOT COMPARED: no record and no reference for it" in done.stdout


def test_inductor_kernels_are_launched_alone_with_the_arguments_the_run_recorded(replayed):
    _, out = replayed["autotune_mlp"]
    launches = recorded_launches(out)
    tensor = {"tensor": True}
    # a template's FixedGrid values and a pointwise kernel's size, which the modules fix in their kernels
    template = launches[("g0_forward", "triton_tem_fused_addmm_t_0")]
    programs = template["grid"][0]  # (256 in this capture: the 128 x 128 tiles max-autotune picked)
    assert inductor_arguments(template) == [tensor, tensor, tensor, tensor, {"value": programs}, {"value": 1}, {"value": 1}]
    assert inductor_arguments(launches[("g0_forward", "triton_poi_fused_relu_1")]) == [tensor, {"value": 4194304}]
    assert inductor_arguments(None) is None


def test_a_template_sweep_tries_its_own_config_then_inductors_then_tiles_near_it(replayed):
    manifest, out = replayed["autotune_mlp"]
    kernel = next(k for k in kernels(manifest) if k["name"] == "triton_tem_fused_addmm_t_0")
    module = read_module_file((out / kernel["module"]).read_text(), kernel["module"])
    graph = parse_output_code((out / "raw/g0_forward/output_code.py").read_text())
    space = sweep_space(next(k for k in graph.kernels if k.name == kernel["name"]), module)
    configs = sweep_configs(space, 24)
    assert len(configs) == 24 and configs[0] == dict(module.config)
    assert len({tuple(sorted(c.items())) for c in configs}) == 24
    for config in configs:
        assert (config["BLOCK_M"] * config["BLOCK_K"] + config["BLOCK_K"] * config["BLOCK_N"]) * 2 * config["num_stages"] <= SHARED_MEMORY
        assert config["GROUP_M"] == module.config["GROUP_M"]
    tried = {(c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["num_stages"], c["num_warps"]) for c in configs}
    assert set(INDUCTOR_MM_CONFIGS) <= tried  # (all of them fit in bf16)


BF16_DOT = '''
import torch, triton, triton.language as tl
from harvest.interpret_shim import install

@triton.jit
def dot(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b, out_dtype=tl.float32))

torch.manual_seed(0)
a, b, c = torch.randn(16, 16).bfloat16(), torch.randn(16, 16).bfloat16(), torch.empty(16, 16)
install()
dot[(1,)](a, b, c)
print("error", (c - a.float() @ b.float()).abs().max().item())
'''


def test_the_shim_gives_the_interpreter_a_bfloat16_dot():
    done = subprocess.run([sys.executable, "-c", BF16_DOT], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) < 1e-4  # (triton 3.9's interpreter alone: about 1e10, bits multiplied)


def test_h200_cooperative_reductions_keep_their_split_and_check_under_the_interpreter(replayed):
    """The H200 ran them with RSPLIT 64 (a whole-tensor mean: 64 programs) and 16 (8 rows: 128 programs): the modules
    launch that grid cooperatively, zero the semaphores (not the partials' workspace: Inductor's wrapper does not
    either), and every output has a reference. Under the interpreter each runs in two passes (the barrier's) and
    agrees with eager: the mean's 64 programs in about 8 s, the var_mean's 128 in about 40 s (281 s before the shim folded Welford partials in numpy)."""
    manifest, out = replayed["cooperative"]
    assert manifest["references"] == {"full": 2, "partial": 0, "none": 0, "from_recorded_graph": 2}
    splits = {}
    for kernel in kernels(manifest):
        text = (out / kernel["module"]).read_text()
        assert kernel["kind"] == "cooperative_reduction" and "launch_cooperative_grid=True" in text
        assert "sem_ptr.zero_()" in text and "ws_ptr.zero_()" not in text  # the partials: written before read
        splits[kernel["name"]] = re.search(r"'RSPLIT': (\d+)", text).group(1)
    assert splits == {"triton_unk_fused_add_amax_mul_sum_var_mean_0": "16", "triton_unk_fused_abs_mean_mul_1": "64"}
    path, _ = module_text(out, manifest, "triton_unk_fused_abs_mean_mul_1")
    done = run_check(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mean_ptr: reference: ok (1 values, torch.float32" in done.stdout and "made-up inputs" in done.stdout
    path, _ = module_text(out, manifest, "triton_unk_fused_add_amax_mul_sum_var_mean_0")
    done = run_check(path)
    assert done.returncode == 0 and done.stdout.count("reference: ok (8 values") == 3, done.stdout + done.stderr


def test_an_h200_fixed_config_kernel_keeps_its_config_and_checks(replayed):
    manifest, out = replayed["fixed_config"]
    (kernel,) = kernels(manifest)
    assert (kernel["kind"], kernel["reference"]["coverage"]) == ("reduction", "full")
    path = out / kernel["module"]
    assert "CONFIG = {'BLOCK_COLS': 256, 'BLOCK_ROWS': 4, 'num_warps': 2, 'num_stages': 3}" in path.read_text()
    done = run_check(path)
    assert done.returncode == 0 and done.stdout.count("reference: ok") == 2, done.stdout + done.stderr


def test_a_convolution_template_reads_its_input_through_pointers_built_from_it(replayed):
    """A convolution template loads through `x_ptrs = x_base + ...`, `x_base = X + ...`, `X = arg_X`: its input and
    weight are read (the record keeps their bytes before the launch; the H200 run whose raw/ this is had them
    treated as outputs, and the module then started them from zeros), and its one output is the convolution without
    its bias (Inductor adds the bias in the next kernel), computed by the reference from the input and weight."""
    manifest, out = replayed["conv_bmm_autotune"]
    assert manifest["references"] == {"full": 14, "partial": 0, "none": 0, "from_recorded_graph": 14}
    templates = [k for k in kernels(manifest) if k["kind"] == "template"]
    assert sum("convolution" in k["name"] and "bmm" not in k["name"] for k in templates) == 2 and len(templates) == 8
    path, text = module_text(out, manifest, "triton_tem_fused_convolution_0")
    region = read_module_file(text, path.name).region
    assert read_params(region) >= {"arg_X", "arg_W"} and "out_ptr" not in read_params(region)
    assert "OUTPUTS = ['out_ptr']" in text and '"arg_X": Tensor((8, 3, 16, 16), (768, 256, 16, 1), torch.float32),' in text
    assert ("convolution_without_bias = torch.ops.aten.convolution.default(primals_3, primals_1, None, [1, 1], [1, 1], "
            "[1, 1], False, [0, 0], 1)") in text
    done = run_check(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "out_ptr: reference: ok (131072 values, torch.float32" in done.stdout
    path, _ = module_text(out, manifest, "triton_tem_fused_add_bmm_transpose_4")  # a bmm with an add fused in, backward
    done = run_check(path)
    assert done.returncode == 0 and "out_ptr: reference: ok (131072 values" in done.stdout, done.stdout + done.stderr


def test_a_bmm_template_takes_its_tiles_from_config_and_keeps_its_matrices_on_the_grid(replayed, tmp_path):
    """A batched matmul template (8 matrices of 256 x 64 @ 64 x 256 on the H200): its tiles are lifted into CONFIG
    as an mm template's are, its grid's first axis follows them and its second is the matrices (`tl.program_id(1)`),
    MATMUL counts the 8 matrices' FLOPs; a tile edit checks under the interpreter, and the sweep has a space."""
    manifest, out = replayed["conv_bmm_autotune"]
    kernel = next(k for k in kernels(manifest) if k["name"] == "triton_tem_fused_bmm_0")
    path = out / kernel["module"]
    text = path.read_text()
    module = read_module_file(text, kernel["module"])
    assert list(module.config)[:4] == list(TILES) and set(TILES) <= set(module.constexprs)
    assert 'grid = (triton.cdiv(256, config["BLOCK_M"]) * triton.cdiv(256, config["BLOCK_N"]), 8, 1)' in text
    assert "MATMUL = dict(M=256, N=256, K=64, B=8, dtype=torch.float32)" in text
    programs = -(-256 // module.config["BLOCK_M"]) * -(-256 // module.config["BLOCK_N"])
    assert kernel["recorded"]["grid"] == [programs, 8, 1]
    config = re.search(r"^CONFIG = (\{.*\})", text, re.M)
    edited = dict(ast.literal_eval(config.group(1)), BLOCK_M=32, BLOCK_N=64, BLOCK_K=32)
    path.write_text(text.replace(config.group(1), repr(edited)))
    done = run_check(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "out_ptr: reference: ok (524288 values, torch.float32" in done.stdout
    graph = parse_output_code((out / "raw/g1_backward/output_code.py").read_text())
    configs = sweep_configs(sweep_space(next(k for k in graph.kernels if k.name == kernel["name"]), module), 12)
    assert len(configs) == 12 and configs[0] == dict(module.config)
