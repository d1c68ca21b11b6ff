"""The reference built from the kernel's graph as the capture recorded it (harvest.capture.kernel_graph and
harvest.reference.recorded): one real capture of tests/targets/reference_reasons.py on the CPU Triton path, which has
a kernel for each reason the comment-built reference failed on unseen models; each is checked by its own module,
under the Triton interpreter, against the reference, output by output."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import CPU_FIXTURES, ROOT, harvest, run_check

from harvest.capture.kernel_graph import format_value
from harvest.reference import build_reference
from harvest.reference.recorded import RecordMismatch, bind_recorded

TARGET = ROOT / "tests" / "targets" / "reference_reasons.py"


@pytest.fixture(scope="module")
def reasons(tmp_path_factory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("reasons") / "out"
    done = harvest("extract", str(TARGET), "-o", str(out), "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads((out / "manifest.json").read_text()), out


def kernels(manifest: dict) -> list[dict]:
    return [k for g in manifest["graphs"] for k in g["kernels"]]


def recorded_graph(out: Path, kernel: dict) -> dict:
    capture = json.loads((out / "raw" / "capture.json").read_text())
    graph = next(g for g in capture["graphs"] if g["name"] == kernel["module"].split("/")[0])
    return graph["kernel_graphs"][kernel["name"]]


def test_every_kernel_has_a_full_reference_built_from_the_recorded_graph(reasons):
    manifest, out = reasons
    made = [k for k in kernels(manifest) if k["module"]]
    assert len(made) >= 25
    assert manifest["references"] == {"full": len(made), "partial": 0, "none": 0, "from_recorded_graph": len(made)}
    for kernel in made:
        assert kernel["reference"]["built_from"] == "recorded graph"
        assert set(kernel["reference"]["outputs"].values()) == {"compared"}, kernel
    report = (out / "report.md").read_text()
    assert "| Eager reference compares |" in report and "(from the recorded graph)" in report


def has_node(graph: dict, target: str, where: str = "nodes") -> bool:
    return any(n["target"] == target for n in graph[where])


# reason -> (which kernel shows it: f(manifest entry, recorded graph)), text its reference must hold)
REASONS = {
    "tuple output of split (chunk)": (lambda k, g: has_node(g, "aten.split.Tensor"), "split[1]"),
    "tuple output of var_mean": (lambda k, g: has_node(g, "aten.var_mean.correction"), "var_mean[1]"),
    "native_dropout's mask, redrawn": (lambda k, g: has_node(g, "prims.inductor_random.default"), "triton_rand("),
    "native_group_norm": (lambda k, g: "native_group_norm" in k["name"], "var_mean"),
    "batch norm's running statistics (copy_ into an input)": (lambda k, g: "batch_norm_legit_functional_copy" in k["name"],
                                                             "torch.ops.aten.copy.default("),
    "a buffer reused in place (in_out_ptr)": (lambda k, g: any("buffers" in a and a["buffers"][0] != a["buffer"]
                                                               for a in g["args"]), "return {"),
    # the kernel that computes the mutation (the scatter), not the one that fills the buffer first
    "index_put into a buffer another kernel filled": (lambda k, g: has_node(g, "aten.index_put.default")
                                                      and any(b in g["computes"] for b, i in g["buffers"].items()
                                                              if i.get("mutates")),
                                                      "aten.index_put.default(arg0_1"),
    "scatter_add": (lambda k, g: has_node(g, "aten.scatter_add.default"), "return {"),
    "a dtype conversion kept in fp32": (lambda k, g: any("convert_element_type" in n["target"] and "bfloat16" in n["args"]
                                                         for n in g["nodes"]), "kept in fp32"),
    "an extern matmul's output read": (lambda k, g: has_node(g, "aten.mm.default", "inputs"), "    mm = "),
    "a split reduction's stage 1": (lambda k, g: k["name"].startswith("triton_red_fused_sum"), "Split reduction, stage 1"),
    "a split reduction's stage 2, into a mutated input": (lambda k, g: "add_copy__sum" in k["name"], "Split reduction, stage 2"),
}


@pytest.mark.parametrize("reason", list(REASONS))
def test_each_reason_has_a_kernel_whose_module_checks_every_output_against_the_reference(reasons, reason):
    manifest, out = reasons
    wanted, text = REASONS[reason]
    found = [k for k in kernels(manifest) if k["module"] and wanted(k, recorded_graph(out, k))]
    assert found, f"no kernel of the capture shows {reason}"
    kernel = found[0]
    module = out / kernel["module"]
    source = module.read_text()
    reference = source[source.index("def reference("): source.index("RECORD = ")]
    assert text in reference, reference
    check = run_check(module)
    assert check.returncode == 0, check.stdout + check.stderr
    outputs = list(kernel["reference"]["outputs"])
    for output in outputs:
        assert f"  {output}: reference: ok" in check.stdout, (output, check.stdout)
        assert f"  {output}: recorded: ok" in check.stdout, (output, check.stdout)


def test_the_dropout_mask_is_redrawn_bit_for_bit_and_the_harness_carries_triton_rand(reasons):
    manifest, out = reasons
    dropout = next(k for k in kernels(manifest) if k["module"] and any(
        n["target"] == "prims.inductor_random.default" for n in recorded_graph(out, k)["nodes"]))
    assert "from harness import Tensor, main" in (out / dropout["module"]).read_text()
    assert re.search(r"^from harness import Tensor, main, .*triton_rand", (out / dropout["module"]).read_text(), re.M)
    assert "def triton_rand(shape, seed):" in (out / "harness.py").read_text()
    check = run_check(out / dropout["module"])
    masks = [line for line in check.stdout.splitlines() if "reference: ok" in line and "torch.bool, bit for bit" in line]
    assert masks, check.stdout  # the mask (a bool output) equals the kernel's exactly


def test_an_artifacts_dropout_mask_is_redrawn_from_the_comment_too(tmp_path):
    """A run's output_code.py read as an artifact (no recorded graph: the reference comes from the comment):
    Inductor's random prims are drawn again as the kernel draws them, so the dropout mask is compared."""
    done = harvest("extract", str(ROOT / "tests" / "targets" / "kernel_kinds.py"), "-o", str(tmp_path / "run"), "-q",
                   cwd=ROOT)
    assert done.returncode == 0, done.stderr
    art = tmp_path / "art"
    done = harvest("extract", str(tmp_path / "run" / "raw" / "g0_forward" / "output_code.py"), "-o", str(art), "-q",
                   cwd=ROOT)
    assert done.returncode == 0, done.stderr
    dropout = [k for k in kernels(json.loads((art / "manifest.json").read_text()))
               if k["module"] and "triton_rand(" in (art / k["module"]).read_text()]
    assert dropout, "the dropout kernel's reference redraws its mask"
    for kernel in dropout:
        assert kernel["reference"]["built_from"] == "graph fragment comment"
        assert kernel["reference"]["coverage"] == "full", kernel["reference"]
        check = run_check(art / kernel["module"])
        assert check.returncode == 0 and "made-up inputs" in check.stdout, check.stdout + check.stderr
        assert any("reference: ok" in line and "torch.bool, bit for bit" in line for line in check.stdout.splitlines())


def test_a_module_whose_size_is_changed_checks_against_the_recorded_graphs_reference(reasons, tmp_path):
    """Made-up inputs of another size, no record: only the reference compares, and it still passes."""
    manifest, out = reasons
    copy = tmp_path / "edited"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("records"))
    kernel = next(k for k in kernels(manifest) if k["module"] and k["module"].endswith("relu_cast_add_kernel.py"))
    module = copy / kernel["module"]
    text = module.read_text()
    edited = text.replace("Tensor((16, 4), (4, 1), torch.float32", "Tensor((24, 4), (4, 1), torch.float32")
    edited = edited.replace('"n_elements": 64,', '"n_elements": 96,')
    assert edited.count("(24, 4)") >= 2 and '"n_elements": 96,' in edited, text[text.index("ARGUMENTS"):][:600]
    module.write_text(edited)
    check = run_check(module)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "only the eager reference compares" in check.stdout
    assert "reference: ok (96 values" in check.stdout, check.stdout


def test_replaying_the_extraction_keeps_the_recorded_graphs(reasons, tmp_path):
    """raw/capture.json keeps every kernel's recorded graph: a replay builds the same references, byte for byte."""
    manifest, out = reasons
    again = tmp_path / "again"
    done = harvest("extract", str(out), "-o", str(again), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((again / "manifest.json").read_text())["references"] == manifest["references"]
    for kernel in kernels(manifest):
        if kernel["module"]:
            assert (again / kernel["module"]).read_bytes() == (out / kernel["module"]).read_bytes()


# -- the fallback and the pure pieces ----------------------------------------------------------------------------

def fixture_kernel():
    from harvest.parse.wrapper import parse_output_code

    graph = parse_output_code((CPU_FIXTURES / "small_model" / "graph_000.py").read_text(), "g0_forward", "forward")
    kernel = graph.kernels[0]
    return kernel, graph.launches_of(kernel.name)[0], graph


def test_a_graph_the_capture_could_not_record_falls_back_to_the_comment_and_says_why():
    kernel, launch, graph = fixture_kernel()
    reference = build_reference(kernel, launch, graph, None, {"error": "AttributeError: no kernel.args"})
    assert reference.source_of == "comment"
    assert any("could not record this kernel's graph (AttributeError: no kernel.args)" in w for w in reference.warnings)
    assert reference.checked, "the comment still gives a reference"


def test_a_recorded_graph_of_another_kernel_is_refused_and_the_comment_used():
    kernel, launch, graph = fixture_kernel()
    other = {"args": [{"param": "in_ptr99", "buffer": "buf0", "kind": "TensorArg"}], "nodes": [], "inputs": [],
             "buffers": {}}
    from harvest.reference.access import scan_kernel

    with pytest.raises(RecordMismatch, match="in_ptr99"):
        bind_recorded(kernel, launch, graph, scan_kernel(kernel), other)
    reference = build_reference(kernel, launch, graph, None, other)
    assert reference.source_of == "comment" and any("RecordMismatch" in w for w in reference.warnings)


def test_fx_values_are_written_in_the_fragments_syntax():
    import torch

    graph = torch.fx.Graph()
    node = graph.placeholder("x")
    assert format_value(node) == "%x"
    assert format_value([node, 2, -1.5]) == "[%x, 2, -1.5]"
    assert format_value((node,)) == "(%x,)"
    assert format_value(float("-inf")) == "-inf" and format_value(float("nan")) == "nan"
    assert format_value(torch.bfloat16) == "torch.bfloat16" and format_value(torch.device("cpu")) == "cpu"
    assert format_value({"dim": [0], "keepdim": True}) == "{dim: [0], keepdim: True}"
    assert format_value("rand") == "'rand'" and format_value(None) == "None"


def test_a_split_welford_second_stage_combines_its_three_partial_buffers():
    """What the H200 makes of a batch norm's statistics (not the CPU path): a first kernel stores the mean, m2 and
    weight of each chunk of every channel, a second combines them. Its reference, from the recorded graph, must
    compute the combine (in order: it is defined after its parts) and agree with torch.var_mean."""
    import torch

    from harvest.model import Buffer, Graph, Kernel, Launch, LaunchArg, TensorMeta

    source = '''@triton.jit
def triton_per_fused_bn_1(in_ptr0, in_ptr1, in_ptr2, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr):
    x0 = tl.arange(0, XBLOCK)
    a = tl.load(in_ptr0 + x0)
    b = tl.load(in_ptr1 + x0)
    c = tl.load(in_ptr2 + x0)
    tl.store(out_ptr0 + x0, libdevice.rsqrt(a + b + c))
'''
    signature = {"in_ptr0": "*fp32", "in_ptr1": "*fp32", "in_ptr2": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32",
                 "r0_numel": "i32", "XBLOCK": "constexpr"}
    kernel = Kernel("triton_per_fused_bn_1", source, "persistent_reduction", "cuda", signature=signature)
    partial = TensorMeta((1, 4, 1, 1, 2), (8, 2, 2, 2, 1), "float32")
    stat = TensorMeta((1, 4, 1, 1), (4, 1, 1, 1), "float32")
    buffers = {b: Buffer(b, partial, "empty") for b in ("buf1", "buf2", "buf3")} | {"buf5": Buffer("buf5", stat, "empty")}
    args = (("in_ptr0", "buf1"), ("in_ptr1", "buf2"), ("in_ptr2", "buf3"), ("out_ptr0", "buf5"))
    launch = Launch(kernel.name, tuple(LaunchArg(p, b, buffer=b) for p, b in args), 0)
    graph = Graph("g0_forward", "forward", (kernel,), (launch,), buffers, (), ())
    meta = {"shape": [1, 4, 1, 1], "stride": [4, 1, 1, 1], "dtype": "float32", "device": "cuda"}
    recorded = {
        "nodes": [
            {"name": "var_mean", "index": 2, "op": "call_function", "target": "aten.var_mean.correction",
             "args": "%convolution, [0, 2, 3]", "kwargs": "correction: 0, keepdim: True", "meta": None},
            {"name": "add", "index": 5, "op": "call_function", "target": "aten.add.Tensor", "args": "%getitem, 1e-05",
             "kwargs": "", "meta": meta},
            {"name": "rsqrt", "index": 6, "op": "call_function", "target": "aten.rsqrt.default", "args": "%add",
             "kwargs": "", "meta": meta},
        ],
        "inputs": [
            {"name": "convolution", "index": 1, "op": "call_function", "target": "aten.convolution.default",
             "args": "%primals_2, %primals_1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1", "kwargs": "",
             "meta": {"shape": [2, 4, 8, 8], "stride": [256, 64, 8, 1], "dtype": "float32", "device": "cuda"}},
            {"name": "getitem", "index": 3, "op": "call_function", "target": "operator.getitem", "args": "%var_mean, 0",
             "kwargs": "", "meta": meta},
            {"name": "getitem_1", "index": 4, "op": "call_function", "target": "operator.getitem",
             "args": "%var_mean, 1", "kwargs": "", "meta": meta},
        ],
        "computes": ["buf5"],
        "args": [{"param": p, "buffer": b, "kind": "TensorArg"} for p, b in args],
        "buffers": {**{b: {"node": None, "views": [], "origins": ["var_mean"]} for b in ("buf1", "buf2", "buf3")},
                    "buf5": {"node": "rsqrt", "views": []}},
    }
    reference = build_reference(kernel, launch, graph, None, recorded)
    assert reference.source_of == "graph" and reference.checked == ("out_ptr0",), (reference.unchecked, reference.warnings)
    namespace = {"torch": torch}
    exec(compile(reference.source, "<reference>", "exec"), namespace)  # harvest's own generated source, in a test
    x = torch.randn(2, 4, 8, 8)
    chunks = x.permute(1, 0, 2, 3).reshape(1, 4, 1, 1, 2, 64)  # two chunks of 64 values per channel
    means = chunks.mean(-1)
    m2s = ((chunks - means[..., None]) ** 2).sum(-1)
    weights = torch.full_like(means, 64.0)
    expected = torch.rsqrt(torch.var_mean(x, [0, 2, 3], correction=0, keepdim=True)[0] + 1e-5)
    got = namespace["reference"](means, m2s, weights)["out_ptr0"]
    torch.testing.assert_close(got, expected)


def test_a_convolutions_bias_added_in_the_kernel_that_reads_it():
    """On a GPU Inductor runs conv(x, w, bias) as the library's conv without the bias, and the kernel that reads it
    adds the bias (here in place, then a ReLU): the buffer it reads is no FX node's value. The reference adds it."""
    import torch

    from harvest.model import Buffer, Graph, Kernel, Launch, LaunchArg, TensorMeta

    source = '''@triton.jit
def triton_poi_fused_convolution_relu_0(in_out_ptr0, in_ptr0, xnumel, XBLOCK: tl.constexpr):
    x0 = tl.arange(0, XBLOCK)
    a = tl.load(in_out_ptr0 + x0)
    b = tl.load(in_ptr0 + x0 // 64)
    tl.store(in_out_ptr0 + x0, tl.maximum(a + b, 0))
'''
    signature = {"in_out_ptr0": "*fp32", "in_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
    kernel = Kernel("triton_poi_fused_convolution_relu_0", source, "pointwise", "cuda", signature=signature)
    out = TensorMeta((2, 4, 8, 8), (256, 64, 8, 1), "float32")
    bias_meta = TensorMeta((4,), (1,), "float32")
    buffers = {"buf0": Buffer("buf0", out, "empty"), "buf1": Buffer("buf1", out, "view", base="buf0"),
               "primals_2": Buffer("primals_2", bias_meta, "input", input_index=1)}
    launch = Launch(kernel.name, (LaunchArg("in_out_ptr0", "buf1", buffer="buf1"),
                                  LaunchArg("in_ptr0", "primals_2", buffer="primals_2")), 0)
    graph = Graph("g0_forward", "forward", (kernel,), (launch,), buffers, (), ())
    meta = {"shape": [2, 4, 8, 8], "stride": [256, 64, 8, 1], "dtype": "float32", "device": "cuda"}
    recorded = {
        "nodes": [
            {"name": "convolution", "index": 3, "op": "call_function", "target": "aten.convolution.default",
             "args": "%primals_3, %primals_1, %primals_2, [1, 1], [1, 1], [1, 1], False, [0, 0], 1", "kwargs": "",
             "meta": meta},
            {"name": "relu", "index": 4, "op": "call_function", "target": "aten.relu.default", "args": "%convolution",
             "kwargs": "", "meta": meta},
        ],
        "inputs": [{"name": "primals_2", "index": 1, "op": "placeholder", "target": "primals_2", "args": "", "kwargs": "",
                    "meta": {"shape": [4], "stride": [1], "dtype": "float32", "device": "cuda"}}],
        "computes": ["buf1"],
        "args": [{"param": "in_out_ptr0", "buffer": "buf1", "kind": "TensorArg", "buffers": ["buf0", "buf1"]},
                 {"param": "in_ptr0", "buffer": "primals_2", "kind": "TensorArg"}],
        "buffers": {"buf0": {"node": None, "views": [], "origins": ["convolution"]}, "buf1": {"node": "relu", "views": []},
                    "primals_2": {"node": "primals_2", "views": [], "graph_input": True}},
    }
    reference = build_reference(kernel, launch, graph, None, recorded)
    assert reference.source_of == "graph" and reference.checked == ("in_out_ptr0",), (reference.unchecked, reference.warnings)
    namespace = {"torch": torch}
    exec(compile(reference.source, "<reference>", "exec"), namespace)  # harvest's own generated source, in a test
    x, w, bias = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3), torch.randn(4)
    raw = torch.nn.functional.conv2d(x, w, None, padding=1)
    got = namespace["reference"](raw, bias)["in_out_ptr0"]
    torch.testing.assert_close(got, torch.relu(torch.nn.functional.conv2d(x, w, bias, padding=1)))


def test_a_layer_norm_that_reads_its_row_sum_from_the_kernel_before_computes_its_own_variance(tmp_path):
    """examples/models/encoder_norm_first.py on the CPU path: one kernel stores the rows' sums of the dropout's
    residual, the next divides that by 32 for the mean, subtracts it from the row and computes the variance itself.
    The sum is the mean's, not a Welford m2: the reference recomputes var_mean (it once took the sum over 32 as the
    variance, and rsqrt of a negative mean gave NaN)."""
    out = tmp_path / "out"
    done = harvest("extract", str(ROOT / "examples" / "models" / "encoder_norm_first.py"), "-o", str(out), "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    kernel = next(k for k in kernels(manifest) if k["name"].endswith("native_layer_norm_backward_transpose_view_7"))
    source = (out / kernel["module"]).read_text()
    reference = source[source.index("def reference("): source.index("RECORD = ")]
    assert "var_mean" in reference and "a_ptr" not in reference.split("\n")[0], reference
    check = run_check(out / kernel["module"])
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("reference: ok") == 3, check.stdout
