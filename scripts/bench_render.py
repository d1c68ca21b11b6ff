"""What harvest spends after the run: replay an extraction (parse, rename, reference, render, write) N times.

    python scripts/bench_render.py EXTRACTION [--repeats 3] [--workers 1 2]

A replay reads raw/ and runs no target, so it times exactly the part of `harvest extract` that comes after the
capture. --workers caps the render worker processes (harvest uses min(cores, 8)). Prints the median and min..max
per worker count; every replay must give the same files. torch is imported before the timings start.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch  # noqa: F401  (imported before any timing: a real extraction pays it once, whatever the workers)

import harvest.api as api


def tree(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extraction", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    options = parser.parse_args()
    reference = None
    for workers in options.workers:
        os.cpu_count = lambda n=workers: n  # what render_all sizes its pool by
        times = []
        for _ in range(options.repeats):
            out = Path(tempfile.mkdtemp(prefix="harvest-bench-render-")) / "out"
            started = time.perf_counter()
            api.extract(options.extraction, out)
            times.append(time.perf_counter() - started)
            files = tree(out)
            assert reference is None or files == reference, "replays differ"
            reference = files
            shutil.rmtree(out.parent)
        print(f"{options.extraction.name}: {workers} worker(s): {statistics.median(times):.2f} s "
              f"({min(times):.2f}..{max(times):.2f}), {options.repeats} runs")


if __name__ == "__main__":
    main()
