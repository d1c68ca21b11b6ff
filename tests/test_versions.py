"""Every torch from 2.5 to 2.14: each version's captured corpus replays through parse, rename and render.

tests/fixtures/versions/torch-<v>_triton-<v>/<target>/ holds what `scripts/version_matrix.py --fixtures` copied from a
live `harvest extract examples/<target>.py --device cpu` under that torch: raw/capture.json, raw/<graph>/output_code.py
(no tensor records) and expected.json (the graphs and kernels the live run extracted, its exit and its checks). A
version whose CPU Triton path captured nothing has a README.md saying why. The replay here runs in-process on
whichever torch the test suite has: the corpus is data, never imported or run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, tree_env

from harvest.api import extract
from harvest.report import record_text

VERSIONS = FIXTURES / "versions"
CORPORA = sorted(p for p in VERSIONS.iterdir() if p.is_dir())
CASES = [(corpus, target) for corpus in CORPORA for target in sorted(p.parent for p in corpus.glob("*/expected.json"))]


def _id(case: tuple[Path, Path]) -> str:
    return f"{case[0].name}/{case[1].name}"


def test_every_version_from_2_5_to_2_14_has_a_corpus():
    minors = {p.name.split("_")[0].removeprefix("torch-").rsplit(".", 1)[0] for p in CORPORA}
    assert minors >= {f"2.{minor}" for minor in range(5, 15)}, sorted(minors)
    for corpus in CORPORA:
        size = sum(f.stat().st_size for f in corpus.rglob("*") if f.is_file())
        assert size < 300 * 1024, f"{corpus.name}: {size} bytes; the corpus keeps no tensor records"
        assert any(corpus.glob("*/expected.json")) or (corpus / "README.md").is_file(), corpus.name


def test_a_version_that_captured_nothing_says_why():
    silent = [corpus for corpus in CORPORA if not any(corpus.glob("*/expected.json"))]
    for corpus in silent:
        text = (corpus / "README.md").read_text()
        assert "nothing captured" in text and "has no Inductor CPU Triton backend" in text, text
    assert any(c.name.startswith("torch-2.5.") for c in silent), "torch 2.5 has no CPU Triton backend; its README says so"


def test_older_versions_lack_provenance_and_a_failed_run_is_a_note():
    """2.6-2.8 write no provenance artifacts: their replays exercise the report's note (asserted per case below)."""
    bare = {c.name for c, t in CASES if not all(g["provenance"] for g in json.loads((t / "raw/capture.json").read_text())["graphs"])}
    assert {name.split("+")[0] for name in bare} >= {"torch-2.6.0", "torch-2.7.1", "torch-2.8.0"}, sorted(bare)
    # every corpus now runs through; a graph compiled by a run that died before launching it says so
    assert record_text(None, ran=True) == "no launch recorded: the run failed before one finished"
    assert record_text(None) == "no run (artifact)"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_corpus_replays_to_modules_that_compile(case, tmp_path):
    corpus, target = case
    expected = json.loads((target / "expected.json").read_text())
    capture = json.loads((target / "raw" / "capture.json").read_text())
    assert capture["torch"] == expected["torch"] and capture["triton"] == expected["triton"]

    result = extract(target, tmp_path / "out")  # a replay of raw/: no run, no torch of that version needed
    manifest = result.manifest
    assert manifest["torch"] == expected["torch"]

    # the same graphs and kernels, in the same order, as the live run under that torch extracted
    got = {g["name"]: [k["name"] for k in g["kernels"]] for g in manifest["graphs"]}
    assert got == {name: list(kernels) for name, kernels in expected["graphs"].items()}
    assert sum(map(len, got.values())) > 0

    # every kernel gets a module that compiles, or a stated reason
    for graph in manifest["graphs"]:
        for kernel in graph["kernels"]:
            if kernel["module"] is None:
                assert kernel["standalone_reason"], f"{kernel['name']}: neither a module nor a reason"
                continue
            path = tmp_path / "out" / kernel["module"]
            text = path.read_text()
            compile(text, str(path), "exec")
            assert "@triton.jit" in text and "def launch(" in text

    # what the older torch did not write (provenance, recorded launches) is a note in the report, not an exception
    report = (tmp_path / "out" / "report.md").read_text()
    for graph in capture["graphs"]:
        assert f"`{graph['name']}`" in report or graph["name"] in report
        if not graph["provenance"]:
            assert "unknown (the capture holds no provenance artifacts for this graph)" in report
        if not graph["recorded"]:  # compiled, then the run died before its kernels finished a launch (2.6-2.10)
            assert "no launch recorded: the run failed before one finished" in report


SHIM_KERNEL = """
import torch, triton, triton.language as tl
from harvest.interpret_shim import install
assert install()
from triton.language.extra import libdevice

@triton.jit
def kernel(x_ptr, y_ptr, out_ptr, XBLOCK: tl.constexpr):
    i = tl.arange(0, XBLOCK)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    tl.store(out_ptr + i, 2.0 * libdevice.fma(x, y, 0.5) + libdevice.erf(libdevice.rsqrt(y)))

x, y = torch.randn(64), torch.rand(64) + 0.5
out = torch.empty(64)
kernel[(1,)](x, y, out, XBLOCK=64)
torch.testing.assert_close(out, 2.0 * (x * y + 0.5) + torch.erf(torch.rsqrt(y)))
print("ok")
"""


def test_interpreter_shim_runs_libdevice_fma():
    """Inductor of torch 2.8-2.10 writes libdevice.fma (softmax backward); the interpreter returned None for it."""
    run = subprocess.run([sys.executable, "-c", SHIM_KERNEL], capture_output=True, text=True, timeout=120,
                         env=tree_env(TRITON_INTERPRET="1"))  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
