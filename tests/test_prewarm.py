"""harvest/prewarm.py: graphs parsed and kernels renamed while the target runs are the very results the extraction
asks for afterwards (the per-process caches), and a graph still being written is skipped, then read when whole."""

from __future__ import annotations

import threading
import time

from conftest import CUDA_FIXTURES

from harvest.parse import parse_output_code
from harvest.prewarm import prewarm, start_prewarm
from harvest.rename import build_context, kernel_names, rename_kernel

GRAPH = CUDA_FIXTURES / "models/gpt2/g0_forward.py"


def _renames(source: str) -> list:
    graph = parse_output_code(source, "g0_forward", "forward")
    names = kernel_names(graph)
    return [rename_kernel(k.source, build_context(k, graph.launches_of(k.name)[0], graph, names[k.name]))
            for k in graph.kernels if k.standalone_reason is None and graph.launches_of(k.name)]


def test_what_is_renamed_meanwhile_is_what_the_extraction_gets(tmp_path):
    source = GRAPH.read_text(encoding="utf-8")
    rename_kernel.cache_clear()
    (tmp_path / "graph_000.py").write_text(source[: len(source) // 2], encoding="utf-8")  # still being written
    finish = start_prewarm(tmp_path, lambda text: text)
    time.sleep(1.0)
    assert rename_kernel.cache_info().currsize == 0  # half a graph does not parse: nothing renamed, no error
    (tmp_path / "graph_000.py").write_text(source, encoding="utf-8")
    deadline = time.monotonic() + 120
    while rename_kernel.cache_info().currsize < 14 and time.monotonic() < deadline:
        time.sleep(0.2)
    finish()
    warmed = rename_kernel.cache_info().currsize
    assert warmed == 14
    before = rename_kernel.cache_info().hits
    results = _renames(source)
    assert rename_kernel.cache_info().hits - before == len(results) == 14  # every one found, none renamed again
    assert all(r.ok for r in results)


def test_a_stopped_prewarm_returns_at_once(tmp_path):
    stop = threading.Event()
    stop.set()
    (tmp_path / "graph_000.py").write_text(GRAPH.read_text(encoding="utf-8"), encoding="utf-8")
    started = time.monotonic()
    prewarm(tmp_path, lambda text: text, stop)
    assert time.monotonic() - started < 1
