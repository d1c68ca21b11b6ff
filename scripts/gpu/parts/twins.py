"""Check and time every CUDA twin of some extractions on a GPU, in as few compiler runs as possible.

Each twin module builds its own load_inline extension (20-30 s of torch headers each); for a whole model that is
too slow to verify, so this script joins the twins of each extraction into one extension (each twin's code in its
own namespace, kernels and launchers renamed, the extraction's twin_harness.py LAUNCH_HELPERS once), builds the
extensions in parallel, then runs every twin's check() and bench() (twin_harness.Twin) with the joined extension's
launch function. Prints a table; writes twins.json and twins.md.

    python scripts/gpu/parts/twins.py OUT_DIR EXTRACTION [EXTRACTION ...] [--only LIST]

--only LIST: only the twins LIST names, one `EXTRACTION/GRAPH/twin/KERNEL.cu` a line (scripts/twin_variants.py's
changed.txt), EXTRACTION being the extraction directory's name.
--build-only: build the extensions and stop (a later run finds them built: several builds at once, timing after).
--resume: keep OUT_DIR/twins.json's rows and run only the twins it does not have (after an exit 3 or 4 below).

twins.json and twins.md are written again after each twin: a call cut at its limit still returns what ran. A twin
that runs past TWIN_S seconds (env, default 60: a grid barrier that never opens) is written as HANG and the
process exits 3; a twin whose failure is a CUDA error (sticky: every later launch of the process would fail too)
is written as FAIL and the process exits 4. Either way `--resume` goes on with the twins after it.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import io
import json
import os
import re
import sys
import threading
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
#include <torch/types.h>
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


INCLUDE = re.compile(r"^#include [<\"][^>\"]+[>\"][^\n]*\n", re.M)


def joined_sources(twins: list[dict], launch_helpers: str) -> tuple[str, str, list[str]]:
    """One extension's CUDA source, C++ declarations and function names for these twins. Each twin's headers go
    to the top, once, outside every namespace: a header included inside `namespace twin_i` declares its names there
    (cooperative_groups.h inside one redefined libcu++'s atomics, and the whole build failed)."""
    cuda, declarations, functions, headers = [PRELUDE, launch_helpers], [], [], []
    for i, twin in enumerate(twins):
        module_text = twin["module"].read_text()
        launcher = re.search(r'LAUNCHER = r"""(.*?)"""', module_text, re.S).group(1)
        source = twin["cuda"].read_text()
        headers += [h.strip() for h in INCLUDE.findall(source) if h.strip() not in PRELUDE and h.strip() not in headers]
        name = re.search(r"extern \"C\" __global__ void (\w+)\(", source).group(1)
        kernel = INCLUDE.sub("", source).replace(f"void {name}(", f"void {name}_{i}(")
        # every mention of the kernel in its launcher (a `<<<` launch, a cooperative launch's function pointer)
        launcher = re.sub(rf"\b{name}\b", f"twin_{i}::{name}_{i}", launcher).replace("void launch(", f"void launch_{i}(")
        declaration = re.search(r'DECLARATION = "(.*?)"', module_text).group(1).replace("void launch(", f"void launch_{i}(")
        cuda.append(f"namespace twin_{i} {{\n{kernel}\n}}\nusing namespace twin_{i};\n")
        cuda.append(launcher)
        declarations.append(declaration)
        functions.append(f"launch_{i}")
    # `using namespace` of several twins makes hv ambiguous: qualify inside each namespace instead
    text = "".join(cuda).replace("using namespace ", "// ")
    text = text.replace(PRELUDE, PRELUDE + "".join(h + "\n" for h in headers), 1)
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
            raise SystemExit("twins.py: --only needs a file of twin paths, one `EXTRACTION/GRAPH/twin/KERNEL.cu` a line")
        only = set(Path(args[at + 1]).read_text().split())
        del args[at : at + 2]
    build_only, resume = "--build-only" in args, "--resume" in args
    args = [a for a in args if a not in ("--build-only", "--resume")]
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    extractions = [Path(p) for p in args[1:]]
    jobs, plans = [], []
    for extraction in extractions:
        if not (extraction / "manifest.json").is_file():  # its extraction failed or ran past its limit: the others go on
            print(f"no manifest.json in {extraction}: its twins are not run", flush=True)
            continue
        twins = twins_of(extraction, only)
        if not twins:
            continue
        launch_helpers = load(extraction / "twin_harness.py", f"twin_harness_{len(jobs)}").LAUNCH_HELPERS
        cuda, cpp, functions = joined_sources(twins, launch_helpers)
        name = re.sub(r"\W", "_", f"twins_{extraction.parent.name}_{extraction.name}" if only is not None else f"twins_{extraction.name}")
        build_dir = f"/tmp/twin-build/{name}"
        jobs.append((name, cuda, cpp, functions, build_dir))
        plans.append((extraction, twins, name, functions, build_dir, cuda, cpp))
    failed: dict[str, str] = {}  # an extension that does not build: its twins are written as BUILD FAIL, the others go on
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(8, len(jobs) or 1)) as pool:
        futures = {pool.submit(build, job): job[0] for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            try:
                name, seconds = future.result()
                print(f"built {name} in {seconds:.0f} s", flush=True)
            except Exception as exc:
                failed[futures[future]] = errors_of(exc)
                print(f"BUILD FAIL {futures[future]}:\n{failed[futures[future]]}", flush=True)
    if build_only:
        return 0
    from torch.utils.cpp_extension import load_inline

    rows = json.loads((out / "twins.json").read_text()) if resume and (out / "twins.json").is_file() else []
    done = {row["path"] for row in rows}
    limit = float(os.environ.get("TWIN_S", "60"))
    for extraction, twins, name, functions, build_dir, cuda, cpp in plans:
        if all(twin["path"] in done for twin in twins):
            continue
        if name in failed:
            rows += [{"extraction": extraction.name, "kernel": twin["kernel"], "kind": twin["kind"], "path": twin["path"],
                      "check": "BUILD FAIL", "twin_ms": None, "triton_ms": None, "copy_gbps": None, "log": failed[name]}
                     for twin in twins if twin["path"] not in done]
            write(out, rows)
            continue
        extension = load_inline(name=name, cpp_sources=cpp, cuda_sources=cuda, functions=functions, build_directory=build_dir,
                                extra_cuda_cflags=["-O3"], verbose=False)
        for i, twin in enumerate(twins):
            if twin["path"] in done:
                continue
            launch = getattr(extension, f"launch_{i}")
            watchdog = threading.Timer(limit, hang, (out, rows, extraction, twin, limit))
            watchdog.daemon = True
            watchdog.start()
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
            watchdog.cancel()
            timing = timing if row["twin_ms"] and row["triton_ms"] else None
            rows.append(row)
            write(out, rows)
            ratio = f"{row['twin_ms'][0] / row['triton_ms'][0]:.2f}" if timing else "-"
            print(f"{row['check']:4s} {extraction.name}/{twin['kernel']} ({twin['kind']}) twin/triton {ratio}", flush=True)
            if not ok:
                print(log.getvalue()[-1500:], flush=True)
            if not ok and "CUDA error" in log.getvalue():
                print("a CUDA error: this process's later launches would fail too; exit 4 (--resume goes on)", flush=True)
                sys.stdout.flush()
                os._exit(4)
    write(out, rows)
    passed = sum(r["check"] == "ok" for r in rows)
    print(f"{passed} of {len(rows)} twins pass --check")
    return 0 if passed == len(rows) else 1


def errors_of(exc: BaseException) -> str:
    """The compiler's first error lines from a failed load_inline (its message holds ninja's whole output)."""
    text = f"{exc}\n{exc.__cause__ or ''}"
    errors = [line for line in text.splitlines() if "error" in line.lower()]
    return "\n".join(errors[:6]) or text[-1500:]


def hang(out: Path, rows: list[dict], extraction: Path, twin: dict, limit: float) -> None:
    """The watchdog: the twin ran past its limit (a launch that never ends); written as HANG, then exit 3."""
    rows.append({"extraction": extraction.name, "kernel": twin["kernel"], "kind": twin["kind"], "path": twin["path"],
                 "check": "HANG", "twin_ms": None, "triton_ms": None, "copy_gbps": None,
                 "log": f"still running after {limit:.0f} s (check and bench)"})
    write(out, rows)
    # sys.__stdout__: the main thread's stdout is the twin's log (redirect_stdout) while it runs
    print(f"HANG {extraction.name}/{twin['kernel']} ({twin['kind']}): still running after {limit:.0f} s; exit 3 (--resume goes on)",
          file=sys.__stdout__, flush=True)
    os._exit(3)


def write(out: Path, rows: list[dict]) -> None:
    """twins.json and twins.md, as far as the run has come."""
    (out / "twins.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = ["| extraction | kernel | kind | check | twin ms (p20..p80) | Triton ms (p20..p80) | twin / Triton |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        if row["twin_ms"] and row["triton_ms"]:
            (tm, t20, t80), (km, k20, k80) = row["twin_ms"], row["triton_ms"]
            lines.append(f"| {row['extraction']} | {row['kernel']} | {row['kind']} | {row['check']} | {tm:.4f} ({t20:.4f}..{t80:.4f}) | "
                         f"{km:.4f} ({k20:.4f}..{k80:.4f}) | {tm / km:.2f} |")
        else:
            lines.append(f"| {row['extraction']} | {row['kernel']} | {row['kind']} | {row['check']} | - | - | - |")
    (out / "twins.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
