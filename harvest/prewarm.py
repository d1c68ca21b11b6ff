"""Work done while the target runs: `harvest extract`'s own process only waits on the target's process, so each
graph the target has compiled is parsed and its kernels renamed meanwhile, on the core the target leaves idle.

Parsing and renaming are pure and cached per process (parse_output_code, rename_kernel): the extraction after the
run asks the same questions, through the same function (harvest.rename.kernel_code, with the same display names and
the first launch, as harvest.module.pool does), and finds the answers. The cache only saves time: without it the
extraction is the same, byte for byte. Nothing here writes, decides or reports anything; a graph it
cannot read (still being written, say) is left to the extraction, which says what is wrong with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from harvest.parse import parse_output_code
from harvest.rename import kernel_code, kernel_names


def prewarm(capture_dir: Path, normalise: Callable[[str], str], stop: threading.Event, poll: float = 0.2) -> None:
    """Parse and rename every `graph_NNN.py` that appears in `capture_dir` until `stop` is set."""
    done: set[str] = set()
    while not stop.is_set():
        for path in sorted(capture_dir.glob("graph_*.py")):
            if path.name in done or stop.is_set():
                continue
            try:
                graph = parse_output_code(normalise(path.read_text(encoding="utf-8")))
            except Exception:  # half-written, or not a graph harvest reads: tried again, or left to the extraction
                continue
            done.add(path.name)
            names = kernel_names(graph)
            for kernel in graph.kernels:
                launches = graph.launches_of(kernel.name)
                if stop.is_set():
                    return
                if kernel.standalone_reason is None and launches:  # what plan_graph makes a render job of
                    kernel_code(kernel, launches[0], graph, names[kernel.name])
        stop.wait(poll)


def start_prewarm(capture_dir: Path, normalise: Callable[[str], str]) -> Callable[[], None]:
    """Run `prewarm` in a thread; returns the function that stops it (after the kernel it is on)."""
    stop = threading.Event()

    def run() -> None:
        try:
            prewarm(capture_dir, normalise, stop)
        except Exception:  # a warm-up: whatever goes wrong here, the extraction does the same work itself
            pass

    thread = threading.Thread(target=run, name="harvest-prewarm", daemon=True)
    thread.start()

    def finish() -> None:
        stop.set()
        thread.join(timeout=10)

    return finish
