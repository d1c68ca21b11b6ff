"""report.html and "What to tune first": the layout of the fusion drawings, the ranking (estimated and measured), the
page of a real model's extraction, and that page in a real browser (headless Chromium through playwright)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import CUDA_FIXTURES, ROOT, harvest, kernels

from harvest.fusion_svg import fusion_svg, layout, node_layers
from harvest.tune_first import rank_kernels, recorded_bytes, tune_markdown

ENCODER = CUDA_FIXTURES / "recorded" / "encoder_norm_first"


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> tuple[dict, Path]:
    """The H200 capture of a TransformerEncoderLayer(norm_first=True) training step, extracted again here."""
    source = tmp_path_factory.mktemp("encoder") / "encoder_norm_first"
    shutil.copytree(ENCODER, source)
    out = source.parent / "out"
    done = harvest("extract", str(source), "-o", str(out), "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads((out / "manifest.json").read_text()), out


# -- the drawing -----------------------------------------------------------------------------------------------------


def flow(nodes: list[tuple[str, str]], edges: list[tuple[str, str]]) -> dict:
    return {"nodes": [{"id": i, "kind": kind, "name": f"triton_poi_{i}" if kind == "kernel" else i, "ops": ["mul", "add"], "lines": ["m.py:3"]}
                      for i, kind in nodes],
            "edges": [{"src": s, "dst": d, "buffers": [f"buf_{s}_{d}"]} for s, d in edges]}


DIAMOND = flow([("in", "input"), ("a", "kernel"), ("b", "kernel"), ("c", "kernel"), ("out", "output")],
               [("in", "a"), ("in", "b"), ("a", "c"), ("b", "c"), ("in", "c"), ("c", "out")])


def test_each_node_sits_below_every_node_that_feeds_it():
    layer = node_layers([n["id"] for n in DIAMOND["nodes"]], DIAMOND["edges"])
    assert layer == {"in": 0, "a": 1, "b": 1, "c": 2, "out": 3}
    boxes = {box.node_id: box for box in layout(DIAMOND, {}).boxes}
    for edge in DIAMOND["edges"]:
        assert boxes[edge["src"]].y + boxes[edge["src"]].height < boxes[edge["dst"]].y


def test_boxes_of_a_layer_do_not_overlap_and_stay_inside_the_drawing():
    drawn = layout(DIAMOND, {})
    a, b = sorted((box for box in drawn.boxes if box.layer == 1), key=lambda box: box.x)
    assert a.x + a.width < b.x
    for box in drawn.boxes:
        assert 0 <= box.x and box.x + box.width <= drawn.width and 0 <= box.y and box.y + box.height <= drawn.height


CHAIN = flow([("in", "input"), ("a", "kernel"), ("b", "kernel"), ("c", "kernel"), ("d", "kernel"), ("out", "output")],
             [("in", "a"), ("a", "b"), ("b", "c"), ("a", "c"), ("a", "d"), ("c", "d"), ("in", "d"), ("b", "out"), ("d", "out")])


def test_an_edge_that_passes_layers_runs_between_their_boxes_and_inputs_come_as_stubs():
    drawn = layout(CHAIN, {})
    edges = CHAIN["edges"]
    passing = {i for i, e in enumerate(edges) if (e["src"], e["dst"]) in (("a", "c"), ("a", "d"))}
    assert set(drawn.bends) == passing  # in -> d and b -> out are stubs, with no bends
    assert drawn.stubs == {i for i, e in enumerate(edges) if (e["src"], e["dst"]) in (("in", "d"), ("b", "out"))}
    for index in passing:
        for x, top, bottom in drawn.bends[index]:
            row = [box for box in drawn.boxes if box.y == top]
            assert row and all(not (box.x <= x <= box.x + box.width) for box in row)
            assert bottom >= max(box.y + box.height for box in row)


def test_kernels_link_to_their_sections_and_the_drawing_is_the_same_twice():
    svg = fusion_svg(DIAMOND, {"triton_poi_a": "add_kernel"}, link=lambda name: f"#k-{name}")
    assert 'href="#k-triton_poi_a"' in svg and ">add_kernel<" in svg and ">triton_poi_a<" in svg
    assert svg.count('class="edge stub"') == 1  # in -> c passes a layer
    assert svg == fusion_svg(DIAMOND, {"triton_poi_a": "add_kernel"}, link=lambda name: f"#k-{name}")


def test_names_in_the_drawing_are_escaped():
    odd = flow([("in", "input"), ("k", "kernel")], [("in", "k")])
    odd["nodes"][1]["ops"] = ["<script>", "a&b"]
    svg = fusion_svg(odd, {})
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "a&amp;b" in svg


# -- the ranking -----------------------------------------------------------------------------------------------------


def test_the_estimate_ranks_by_bytes_moved_times_launches_and_says_it_is_an_estimate(encoder):
    manifest, out = encoder
    capture = json.loads((out / "raw" / "capture.json").read_text())
    table = rank_kernels(manifest, capture)
    assert not table.measured and len(table.rows) == len(kernels(manifest))
    assert sum(row.share for row in table.rows) == pytest.approx(1.0)
    traffic = [row.bytes_per_launch * row.launches for row in table.rows]
    assert traffic == sorted(traffic, reverse=True) and traffic[0] > 0
    text = tune_markdown(table, top=10)
    assert "An estimate" in text and "share of bytes (estimate)" in text and text.count("\n| ") == 11


def test_bytes_of_a_launch_count_a_storage_read_and_written_twice():
    launch = {"args": [{"param": "in_out_ptr0", "tensor": {"storage": 0}}, {"param": "in_ptr0", "tensor": {"storage": 1}},
                       {"param": "out_ptr0", "tensor": {"storage": 2}}, {"param": "xnumel", "value": 8}],
              "storages": [{"lo": 0, "hi": 64, "written": True}, {"lo": 32, "hi": 64, "written": False},
                           {"lo": 0, "hi": 16, "written": True}]}
    assert recorded_bytes(launch) == 2 * 64 + 32 + 16
    assert recorded_bytes({}) is None


def bench_of(manifest: dict, ms: dict[str, float], call_ms: float, copy_gbps: float = 1000.0) -> dict:
    """bench.json as `harvest bench` writes it on a GPU (the GPU's figures made up: CI has none)."""
    rows, graphs = [], {}
    for graph in manifest["graphs"]:
        step = {"call": {"median_ms": call_ms, "p20_ms": call_ms, "p80_ms": call_ms, "samples": 20}, "kernels": {}, "busy_ms": 0.0}
        for kernel in graph["kernels"]:
            rows.append({"graph": graph["name"], "inductor_kernel": kernel["name"], "bytes_moved": 1_000_000})
            step["kernels"][kernel["name"]] = {"ms": ms.get(kernel["name"], 0.001), "launches": 1}
        step["kernels"]["ampere_sgemm_128x64_nn"] = {"ms": 0.05, "launches": 2}
        step["busy_ms"] = sum(k["ms"] for k in step["kernels"].values())
        graphs[graph["name"]] = {"kernels": {}, "step": step}
    return {"rows": rows, "graphs": graphs, "copy_gbps": copy_gbps, "env": {"gpu": "NVIDIA H200"}}


def test_measured_shares_are_of_the_step_and_the_saving_is_what_the_copy_bound_leaves(encoder):
    manifest, _ = encoder
    first = kernels(manifest)[5]["name"]
    bench = bench_of(manifest, {first: 0.5}, call_ms=1.0)
    table = rank_kernels(manifest, None, bench)
    assert table.measured and table.step_ms == pytest.approx(len(manifest["graphs"]) * 1.0)
    top = table.rows[0]
    assert top.inductor_name == first and top.share == pytest.approx(0.5 / table.step_ms)
    assert top.gbps == pytest.approx(1e6 / 0.5e-3 / 1e9)  # 1 MB in 0.5 ms: 2 GB/s
    assert top.pct_copy == pytest.approx(0.2)
    assert top.saved_ms == pytest.approx(0.5 - 1e6 / 1000e9 * 1e3)
    assert table.busy_ms > table.kernels_ms  # the extern matmuls are part of the step, not of any Triton kernel
    externs = [row for row in table.rows if row.kind == "extern"]
    assert len(externs) == len(manifest["graphs"]) and externs[0].launches_per_step == 2
    assert sum(row.share for row in table.rows) == pytest.approx(table.busy_ms / table.step_ms)
    text = tune_markdown(table)
    assert "Measured by `harvest bench` on NVIDIA H200" in text and "saved at the bound" in text
    assert ("The device is idle" in text) == (table.busy_ms < 0.9 * table.step_ms)


def test_a_graph_bench_could_not_time_is_left_out_of_the_step_and_said_so(encoder):
    manifest, _ = encoder
    bench = bench_of(manifest, {}, call_ms=1.0)
    first = manifest["graphs"][0]["name"]
    bench["graphs"][first] = {"error": "the bench process died running Inductor's call() under the profiler (killed by SIGSEGV)"}
    table = rank_kernels(manifest, None, bench)
    assert table.measured and table.step_ms == pytest.approx(len(manifest["graphs"]) - 1)
    assert all(row.graph != first for row in table.rows)
    assert f"{first} is not in the step: the bench process died" in tune_markdown(table)
    assert not rank_kernels(manifest, None, {"rows": [], "graphs": {}}).measured


# -- the page --------------------------------------------------------------------------------------------------------


def test_extract_writes_report_html_beside_report_md_and_records_it(encoder):
    manifest, out = encoder
    page = (out / "report.html").read_text()
    assert "report.html" in manifest["generated_files"]
    for graph in manifest["graphs"]:
        for kernel in graph["kernels"]:
            assert f'<details class="kernel" id="k-{graph["name"]}-{kernel["name"]}">' in page
            assert f">{kernel['display_name']}</a>" in page
    assert page.count('class="kernel-row"') == len(kernels(manifest))
    assert page.count("<svg") == len([g for g in manifest["graphs"] if g.get("fusion")])
    assert "What to tune first" in (out / "report.md").read_text()


def test_the_page_fetches_nothing(encoder):
    _, out = encoder
    page = (out / "report.html").read_text()
    assert "default-src 'none'" in page
    assert not re.search(r"""(src|href)\s*=\s*["'](https?:)?//""", page)
    assert "<link" not in page and "@import" not in page and "url(http" not in page


def test_harvest_report_writes_the_same_bytes_and_html_alone_on_request(encoder, tmp_path):
    _, out = encoder
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    before = (copy / "report.html").read_bytes()
    (copy / "report.html").unlink()
    done = harvest("report", str(copy), "--html", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == [str(copy / "report.html")]
    assert (copy / "report.html").read_bytes() == before
    # a report made again by `harvest report` (here with bench figures, so it differs from extract's) is recorded as
    # harvest's: a later extract replaces it as its own, and does not keep it as a hand edit
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "bench").mkdir()
    (copy / "bench" / "bench.json").write_text(json.dumps(bench_of(manifest, {}, call_ms=1.0)))
    assert harvest("report", str(copy), cwd=ROOT).returncode == 0
    assert "Measured by" in (copy / "report.md").read_text()
    recorded = json.loads((copy / "manifest.json").read_text())["generated_files"]
    assert recorded["report.md"] == hashlib.sha256((copy / "report.md").read_bytes()).hexdigest()
    replay = harvest("extract", str(copy), "-q", cwd=ROOT)
    assert replay.returncode == 0 and "kept your edited" not in replay.stderr, replay.stderr


def test_kernels_are_shown_with_their_highlighted_code(encoder):
    manifest, out = encoder
    page = (out / "report.html").read_text()
    first = kernels(manifest)[0]
    assert f'<a href="{first["module"]}">' in page
    assert 'class="code"' in page and "triton" in page


# -- in a browser ----------------------------------------------------------------------------------------------------


def chromium() -> str:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.requires_browser
def test_the_page_in_headless_chromium_shows_its_kernels_with_no_error_and_no_request(encoder, tmp_path):
    from playwright import sync_api
    manifest, out = encoder
    url = (out / "report.html").resolve().as_uri()
    count = len(kernels(manifest))
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        problems, requests = [], []
        page.on("console", lambda message: problems.append(message.text) if message.type in ("error", "warning") else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("request", lambda request: requests.append(request.url))
        page.goto(url)
        assert page.locator("tr.kernel-row:visible").count() == count
        assert page.locator("#shown").inner_text() == f"{count} of {count} kernels"
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=False)
        assert shot.stat().st_size > 20_000  # a page with content, not a blank one
        some = kernels(manifest)[0]
        page.fill("#search", some["display_name"])
        visible = page.locator("tr.kernel-row:visible").count()
        assert 1 <= visible < count
        page.fill("#search", "")
        page.select_option("#kind", "pointwise")
        pointwise = sum(k["kind"] == "pointwise" for k in kernels(manifest))
        assert page.locator("tr.kernel-row:visible").count() == pointwise
        page.locator("tr.kernel-row:visible a").first.click()
        # the page opens the kernel's <details> on hashchange, an event that fires after the click returns
        page.wait_for_selector("details.kernel[open]", timeout=5_000)
        assert page.locator("details.kernel[open]").count() == 1
        assert page.locator("details.kernel[open] .code").count() == 1
        browser.close()
    assert problems == []
    assert requests == [url]


def test_bench_puts_an_attention_backwards_seed_and_offset_on_the_host(encoder):
    """The memory-efficient attention backward reads its dropout seed and offset on the host; get_args() made them
    on the GPU, and the graph's call() died with SIGSEGV on the H200 (docs/benchmarks.md, session 11)."""
    from harvest.bench.plan import host_inputs
    from harvest.parse import parse_output_code

    manifest, out = encoder
    backward = next(g for g in manifest["graphs"] if g["name"].endswith("backward"))
    attention = next(e for e in backward["externs"] if "efficient_attention_backward" in e["op"])
    inputs = parse_output_code((out / backward["raw"]).read_text(), name=backward["name"]).inputs
    positions = host_inputs(backward, out)
    assert [inputs[i] for i in positions] == sorted(attention["args"][7:9], key=inputs.index)
    forward = next(g for g in manifest["graphs"] if g["name"].endswith("forward"))
    assert host_inputs(forward, out) == []


def test_a_matmul_template_is_measured_against_the_matmul_peak(encoder):
    manifest, _ = encoder
    template = kernels(manifest)[3]["name"]
    bench = bench_of(manifest, {template: 0.2}, call_ms=1.0)
    for row in bench["rows"]:
        if row["inductor_kernel"] == template:
            row.update(flops=2 * 4096**3, peak_tflops=700.0)  # 137 GFLOP in 0.2 ms: 687 TFLOP/s
    top = rank_kernels(manifest, None, bench).rows[0]
    assert top.inductor_name == template and top.gbps is None
    assert top.tflops == pytest.approx(2 * 4096**3 / 0.2e9) and top.pct_peak == pytest.approx(100 * top.tflops / 700)
    assert top.saved_ms == pytest.approx(0.2 - 2 * 4096**3 / 700e9)
    assert "687 TFLOP/s" in tune_markdown(rank_kernels(manifest, None, bench))


def test_reports_written_again_keep_one_edited_by_hand(encoder, tmp_path):
    """After twin, ptx or bench the reports are written again, through the writer's no-clobber rule."""
    from harvest.report_html import refresh_reports

    manifest, out = encoder
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "report.md").write_text("my notes\n")
    (copy / "report.html").unlink()
    again = json.loads((copy / "manifest.json").read_text())
    written, notes = refresh_reports(copy, again)
    assert written == [copy / "report.html"] and (copy / "report.md").read_text() == "my notes\n"
    assert notes == [f"kept your edited {copy / 'report.md'} (`harvest report {copy}` writes it again)"]
    assert again["generated_files"]["report.md"] == manifest["generated_files"]["report.md"]
    assert (copy / "report.html").read_bytes() == (out / "report.html").read_bytes()
