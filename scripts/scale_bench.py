"""Speed and memory at scale (issue 11, part 4): three figures, one command, markdown for docs/benchmarks.md.

    python scripts/scale_bench.py [--parts render models profile] [--repeats 3] [--models gpt2 conv_bn ...]

render   parse + rename + render throughput (kernels/s) and peak RSS on one large capture: every output_code the
         tests/fixtures/torch-*/ directories hold (CUDA and CPU captures, the examples and the six real models),
         laid out as one TORCH_COMPILE_DEBUG directory and extracted by reading it (no run). Each repetition runs
         in a fresh process that imports torch before the clock starts; 1 and 2 render workers.
models   per model of examples/models/*.py: wall time of the plain run (`python MODEL`, Inductor's default CPU
         backend), of the same script through the CPU Triton path with no harvest hooks, and of
         `harvest extract MODEL`; fresh Inductor/Triton caches every run, runs interleaved; the size of raw/.
profile  cProfile of the render part (1 worker, so the work stays in the profiled process): harvest's own
         functions, top 15 by cumulative time.
Prints median and min..max of --repeats runs. Benchmarks, not tests: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_extract import TRITON_PATH_RUNNER, fresh_env  # noqa: E402

from harvest.capture.artifacts import looks_like_output_code  # noqa: E402

# Run in a fresh interpreter: extract the artifact, report time and peak memory (the process, and its render workers).
RENDER_CHILD = """
import json, os, resource, sys, time
import torch  # a real extraction has torch imported before its post-run work; not timed
import harvest.api as api
source, out, workers, profile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
os.cpu_count = lambda: workers  # what render_all sizes its pool by
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if profile:
    import cProfile
    profiler = cProfile.Profile()
    profiler.enable()
started = time.perf_counter()
api.extract(source, out)
elapsed = time.perf_counter() - started
if profile:
    profiler.disable()
    profiler.dump_stats(profile)
manifest = json.load(open(os.path.join(out, "manifest.json")))
kernels = sum(len(g["kernels"]) for g in manifest["graphs"])
print(json.dumps({"seconds": elapsed, "kernels": kernels, "graphs": len(manifest["graphs"]),
                  "rss_before_kib": before, "rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "rss_workers_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def cell(times: list[float], unit: str = "s") -> str:
    return f"{statistics.median(times):.2f} {unit} ({min(times):.2f}..{max(times):.2f})"


def build_large_capture(where: Path) -> tuple[Path, int]:
    """Every fixture output_code as one TORCH_COMPILE_DEBUG dir; returns it and the number of graphs."""
    sources = sorted(p for p in (ROOT / "tests" / "fixtures").glob("torch-*/**/*.py") if looks_like_output_code(p.read_text()))
    root = where / "torch_compile_debug" / "run_0" / "torchinductor"
    for index, source in enumerate(sources):
        graph = root / f"g{index:03d}_{source.parent.name}_{source.stem}"
        graph.mkdir(parents=True)
        shutil.copy(source, graph / "output_code.py")
    return where / "torch_compile_debug", len(sources)


def render_child(source: Path, workers: int, profile: str = "") -> dict:
    with tempfile.TemporaryDirectory(prefix="harvest-scale-") as tmp:
        env = dict(os.environ, PYTHONPATH=str(ROOT), TRITON_INTERPRET="1")
        done = subprocess.run([sys.executable, "-c", RENDER_CHILD, str(source), f"{tmp}/out", str(workers), profile],
                              env=env, capture_output=True, text=True, check=True, cwd=ROOT)
        return json.loads(done.stdout.strip().splitlines()[-1])


def part_render(capture: Path, graphs: int, repeats: int) -> None:
    print(f"\n### parse + rename + render: one capture of {graphs} graphs (every fixture output_code)\n")
    print("| render workers | kernels | wall (median, min..max) | kernels/s (median) | peak RSS, harvest process | peak RSS, one worker |")
    print("|---|---|---|---|---|---|")
    for workers in (1, 2):
        runs = [render_child(capture, workers) for _ in range(repeats)]
        times = [r["seconds"] for r in runs]
        kernels = runs[0]["kernels"]
        rss = max(r["rss_kib"] for r in runs) / 1024
        before = max(r["rss_before_kib"] for r in runs) / 1024
        worker_rss = max(r["rss_workers_kib"] for r in runs) / 1024
        workers_cell = f"{worker_rss:.0f} MiB" if workers > 1 else "(none)"
        print(f"| {workers} | {kernels} | {cell(times)} | {kernels / statistics.median(times):.0f} | "
              f"{rss:.0f} MiB ({before:.0f} MiB after importing torch) | {workers_cell} |", flush=True)


def part_profile(capture: Path, top: int = 15) -> None:
    import pstats

    with tempfile.TemporaryDirectory(prefix="harvest-profile-") as tmp:
        stats_path = f"{tmp}/extract.prof"
        run = render_child(capture, 1, stats_path)
        print(f"\n### cProfile: harvest's own functions by cumulative time ({run['kernels']} kernels, 1 worker, "
              f"{run['seconds']:.2f} s under the profiler)\n")
        stats = pstats.Stats(stats_path)
        own = str(ROOT / "harvest") + os.sep
        rows = [(key, value) for key, value in stats.stats.items() if key[0].startswith(own)]  # type: ignore[attr-defined]
        rows.sort(key=lambda item: item[1][3], reverse=True)
        print("| cumulative | own time | calls | function |")
        print("|---|---|---|---|")
        for (path, line, name), (_, calls, own_time, cumulative, _) in rows[:top]:
            print(f"| {cumulative:.2f} s | {own_time:.2f} s | {calls} | `{Path(path).relative_to(ROOT)}:{line} {name}` |")
        total = stats.total_tt  # type: ignore[attr-defined]
        print("\nOutside harvest, by own time (top 8 of the same profile):\n")
        print("| own time | calls | function |")
        print("|---|---|---|")
        others = sorted(((k, v) for k, v in stats.stats.items() if not k[0].startswith(own)),  # type: ignore[attr-defined]
                        key=lambda item: item[1][2], reverse=True)
        for (path, line, name), (_, calls, own_time, _, _) in others[:8]:
            print(f"| {own_time:.2f} s | {calls} | `{Path(path).name}:{line} {name}` |")
        print(f"\n(profile total {total:.2f} s)")


def raw_size(raw: Path) -> int:
    return sum(p.stat().st_size for p in raw.rglob("*") if p.is_file())


def part_models(models: list[str], repeats: int) -> None:
    print("\n### each real model: harvest extract against the plain run (fresh caches every run)\n")
    print("| model | kernels | plain run (C++ backend) | CPU Triton path, no harvest | harvest extract | extract / plain | "
          "extract / Triton path | raw/ |")
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        script = f"examples/models/{model}.py"
        times: dict[str, list[float]] = {"plain": [], "triton": [], "extract": []}
        size = kernels = 0
        for _ in range(repeats):  # interleaved, so that a slow minute of the machine hits every column alike
            for column, command in (
                ("plain", [sys.executable, script]),
                ("triton", [sys.executable, "-c", TRITON_PATH_RUNNER, script]),
                ("extract", [sys.executable, "-m", "harvest", "extract", script, "-o", "{tmp}/out", "-q"]),
            ):
                with tempfile.TemporaryDirectory(prefix="harvest-scale-") as tmp:
                    started = time.perf_counter()
                    subprocess.run([part.replace("{tmp}", tmp) for part in command], env=fresh_env(tmp), check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
                    times[column].append(time.perf_counter() - started)
                    if column == "extract":
                        size = raw_size(Path(tmp) / "out" / "raw")
                        manifest = json.loads((Path(tmp) / "out" / "manifest.json").read_text())
                        kernels = sum(len(g["kernels"]) for g in manifest["graphs"])
        plain, triton, extract = (statistics.median(times[c]) for c in ("plain", "triton", "extract"))
        print(f"| {model} | {kernels} | {cell(times['plain'])} | {cell(times['triton'])} | {cell(times['extract'])} | "
              f"{extract / plain:.2f}x | {extract / triton:.2f}x | {size / 2**20:.1f} MiB |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", choices=("render", "models", "profile"), default=["render", "profile", "models"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=sorted(p.stem for p in (ROOT / "examples" / "models").glob("*.py")))
    options = parser.parse_args()
    import torch
    import triton

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    print(f"torch {torch.__version__}, triton {triton.__version__}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores, harvest at {commit}")
    with tempfile.TemporaryDirectory(prefix="harvest-large-") as tmp:
        capture, graphs = build_large_capture(Path(tmp))
        if "render" in options.parts:
            part_render(capture, graphs, options.repeats)
        if "profile" in options.parts:
            part_profile(capture)
    if "models" in options.parts:
        part_models(options.models, options.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
