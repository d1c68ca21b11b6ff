"""Check and time every CUDA twin of some extractions on a GPU, in as few compiler runs as possible.

Each twin module builds its own load_inline extension (20-30 s of torch headers each); for a whole model that is
too slow to verify, so this script joins the twins of each extraction into one extension (each twin's code in its
own namespace, kernels and launchers renamed, the extraction's twin_harness.py LAUNCH_HELPERS once), builds the
extensions in parallel, then runs every twin's check() and bench() (twin_harness.Twin) with the joined extension's
launch function. Prints a table; writes twins.json and twins.md.

    python scripts/gpu_twins.py OUT_DIR EXTRACTION [EXTRACTION ...] [--only LIST]

--only LIST: only the twins LIST names, one `EXTRACTION/GRAPH/twin/KERNEL.cu` a line (scripts/twin_variants.py's
changed.txt), EXTRACTION being the extraction directory's name.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import io
import json
import re
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

PRELUDE = """#include <cstdint>
#include <cmath>
#include <cassert>
#include <cstring>
#include <type_traits>
#include <algorithm>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
"""


def twins_of(extraction: Path, only: set[str] | None = None) -> list[dict]:
    manifest = json.loads((extraction / "manifest.json").read_text())
    found = []
    for graph in manifest["graphs"]:
        for kernel in graph["kernels"]:
            twin = kernel.get("twin") or {}
            if twin.get("status") == "ok" and (only is None or f"{extraction.name}/{twin['cuda']}" in only):
                found.append({"kernel": kernel.get("display_name") or kernel["name"], "kind": kernel["kind"],
                              "cuda": extraction / twin["cuda"], "module": extraction / twin["module"],
                              "path": f"{extraction.name}/{twin['cuda']}"})
    return found


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def joined_sources(twins: list[dict], launch_helpers: str) -> tuple[str, str, list[str]]:
    cuda, declarations, functions = [PRELUDE, launch_helpers], [], []
    for i, twin in enumerate(twins):
        module_text = twin["module"].read_text()
        launcher = re.search(r'LAUNCHER = r"""(.*?)"""', module_text, re.S).group(1)
        name = re.search(r"extern \"C\" __global__ void (\w+)\(", twin["cuda"].read_text()).group(1)
        kernel = twin["cuda"].read_text().replace(f"void {name}(", f"void {name}_{i}(")
        launcher = launcher.replace(f"{name}<<<", f"{name}_{i}<<<").replace("void launch(", f"void launch_{i}(")
        declaration = re.search(r'DECLARATION = "(.*?)"', module_text).group(1).replace("void launch(", f"void launch_{i}(")
        cuda.append(f"namespace twin_{i} {{\n{kernel}\n}}\nusing namespace twin_{i};\n")
        cuda.append(launcher.replace(f"{name}_{i}<<<", f"twin_{i}::{name}_{i}<<<"))
        declarations.append(declaration)
        functions.append(f"launch_{i}")
    # `using namespace` of several twins makes hv ambiguous: qualify inside each namespace instead
    text = "".join(cuda).replace("using namespace ", "// ")
    return text, "\n".join(declarations), functions


def build(job: tuple[str, str, str, list[str], str]):
    name, cuda, cpp, functions, build_dir = job
    from torch.utils.cpp_extension import load_inline

    Path(build_dir).mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    load_inline(name=name, cpp_sources=cpp, cuda_sources=cuda, functions=functions, build_directory=build_dir,
                extra_cuda_cflags=["-O3"], verbose=False)
    return name, time.monotonic() - started


def main() -> int:
    args = sys.argv[1:]
    only = None
    if "--only" in args:
        at = args.index("--only")
        if at + 1 >= len(args) or not Path(args[at + 1]).is_file():
            raise SystemExit("gpu_twins: --only needs a file of twin paths, one `EXTRACTION/GRAPH/twin/KERNEL.cu` a line")
        only = set(Path(args[at + 1]).read_text().split())
        del args[at : at + 2]
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    extractions = [Path(p) for p in args[1:]]
    jobs, plans = [], []
    for extraction in extractions:
        twins = twins_of(extraction, only)
        if not twins:
            continue
        launch_helpers = load(extraction / "twin_harness.py", f"twin_harness_{len(jobs)}").LAUNCH_HELPERS
        cuda, cpp, functions = joined_sources(twins, launch_helpers)
        name = re.sub(r"\W", "_", f"twins_{extraction.parent.name}_{extraction.name}" if only is not None else f"twins_{extraction.name}")
        build_dir = f"/tmp/twin-build/{name}"
        jobs.append((name, cuda, cpp, functions, build_dir))
        plans.append((extraction, twins, name, functions, build_dir, cuda, cpp))
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(8, len(jobs) or 1)) as pool:
        for name, seconds in pool.map(build, jobs):
            print(f"built {name} in {seconds:.0f} s", flush=True)
    from torch.utils.cpp_extension import load_inline

    rows = []
    for extraction, twins, name, functions, build_dir, cuda, cpp in plans:
        extension = load_inline(name=name, cpp_sources=cpp, cuda_sources=cuda, functions=functions, build_directory=build_dir,
                                extra_cuda_cflags=["-O3"], verbose=False)
        for i, twin in enumerate(twins):
            launch = getattr(extension, f"launch_{i}")
            module = load(twin["module"], f"twin_{name}_{i}")
            bound = sys.modules[module.main.__module__].Twin(vars(module))  # the module bound to its twin_harness.py
            log = io.StringIO()
            try:
                with redirect_stdout(log):
                    ok = bound.check("cuda", 0, launch=launch)
                    timing = bound.bench("cuda", 0, launch=launch)
            except Exception as exc:  # one twin's failure must not hide the others
                ok, timing = False, None
                log.write(f"raised {type(exc).__name__}: {exc}\n")
            figures = (timing or {}).get("timings", {})
            quantiles = {side: [figures[side][key] for key in ("median_ms", "p20_ms", "p80_ms")] for side in ("twin", "kernel")
                         if "median_ms" in figures.get(side, {})}
            row = {"extraction": extraction.name, "kernel": twin["kernel"], "kind": twin["kind"], "path": twin["path"],
                   "check": "ok" if ok else "FAIL",
                   "twin_ms": quantiles.get("twin"), "triton_ms": quantiles.get("kernel"),
                   "copy_gbps": (timing or {}).get("copy_gbps"), "log": log.getvalue()}
            timing = timing if row["twin_ms"] and row["triton_ms"] else None
            rows.append(row)
            ratio = f"{row['twin_ms'][0] / row['triton_ms'][0]:.2f}" if timing else "-"
            print(f"{row['check']:4s} {extraction.name}/{twin['kernel']} ({twin['kind']}) twin/triton {ratio}", flush=True)
            if not ok:
                print(log.getvalue()[-1500:], flush=True)
    (out / "twins.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = ["| extraction | kernel | kind | check | twin ms (p20..p80) | Triton ms (p20..p80) | twin / Triton |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        if row["twin_ms"]:
            (tm, t20, t80), (km, k20, k80) = row["twin_ms"], row["triton_ms"]
            lines.append(f"| {row['extraction']} | {row['kernel']} | {row['kind']} | {row['check']} | {tm:.4f} ({t20:.4f}..{t80:.4f}) | "
                         f"{km:.4f} ({k20:.4f}..{k80:.4f}) | {tm / km:.2f} |")
        else:
            lines.append(f"| {row['extraction']} | {row['kernel']} | {row['kind']} | {row['check']} | - | - | - |")
    (out / "twins.md").write_text("\n".join(lines) + "\n")
    passed = sum(r["check"] == "ok" for r in rows)
    print(f"{passed} of {len(rows)} twins pass --check")
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
