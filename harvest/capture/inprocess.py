"""Capture Inductor output inside the current process: for tests, fuzzing and notebooks.

    with capturing() as sources:
        torch.compile(fn)(x)
    # sources: one output_code.py text per graph Inductor compiled inside the block

Without a GPU this turns on Inductor's CPU Triton backend (offline sm target); TRITON_INTERPRET=1 must already be
set in the environment before triton is imported, which the harvest test suite's conftest does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

_cpu_ready = False


def prepare_cpu_triton(sm: int = 90) -> None:
    """Route Inductor's CPU code through Triton (once per process)."""
    global _cpu_ready
    if _cpu_ready:
        return
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("set TRITON_INTERPRET=1 before importing triton to capture on a machine without a GPU")
    from harvest.capture.bootstrap import setup_cpu_triton

    setup_cpu_triton(sm)
    _cpu_ready = True


@contextlib.contextmanager
def capturing(fresh: bool = True) -> Iterator[list[str]]:
    """Collect the wrapper source of every graph compiled inside the block, in order."""
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.graph import GraphLowering

    if not torch.cuda.is_available():
        prepare_cpu_triton()
    if fresh:
        torch._dynamo.reset()
    sources: list[str] = []
    previous = GraphLowering.save_output_code
    GraphLowering.save_output_code = staticmethod(sources.append)  # type: ignore[assignment]
    try:
        with inductor_config.patch(force_disable_caches=True):
            yield sources
    finally:
        GraphLowering.save_output_code = previous  # type: ignore[assignment]
