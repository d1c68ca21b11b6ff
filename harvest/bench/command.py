"""`harvest bench PATH`: every extracted kernel timed against Inductor's own, the eager reference and the CUDA twin.

PATH is an extraction (it holds manifest.json), one graph directory of it, or one kernel module. Per kernel, on the
same inputs (the run's recorded ones when their data was saved):

  extracted  the module's kernel: CUDA events after a warm-up, L2 flushed before each repetition, median and p20/p80
             (harvest/bench/timing.py; `python k.py --bench` runs the very same lines); its first call (compile + launch)
             is reported apart
  in graph   Inductor's kernel as it runs inside its graph: raw/<graph>/output_code.py's call(get_args()) under
             torch.profiler, the kernel's device time (CUPTI) found by its Inductor name, first launch of each call
  alone      Inductor's own kernel object (its launcher, pinned to the config the run used) launched alone on the
             module's inputs, timed like the extracted one; chosen over re-rendering the kernel with --names inductor
             because it is Inductor's own binary and launch path, not a second compile of the same text
  eager      the module's eager reference (the ATen ops the kernel fused), timed the same way
  twin       <graph>/twin/<kernel>_twin.py, when it exists, run as `python twin.py --bench --json FILE`: it writes
             the schema of timing.bench_result with its figures under timings["twin"] (or ["kernel"])
  GB/s       the kernel's bytes moved over its median; % copy: of a device-to-device copy timed in the same run
  ext/graph  the extracted kernel's device time by the profiler over its device time in the graph (one clock)

Before timing, every kernel and swept config is compiled once in parallel processes (Triton's on-disk cache), so
the timing child, which runs alone, only loads binaries; a child that dies (a sticky CUDA error) loses its kernel,
and a new one goes on with the rest.
Inductor's wrapper modules are code: they run (in the bench child, never in this process) only for an extraction
made by running a target on CUDA, or an artifact with --run-artifact, as for `harvest extract`.
Results go to <extraction>/bench/: bench.csv and bench.json (one BenchRow per kernel, its fields in CSV order), with
--sweep <graph>/<kernel>.sweep.csv/.json/.png, with --profile profile.txt and trace.json. --ncu prints (or runs)
the Nsight Compute command for each kernel; its report goes next to the module.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harvest.bench.output import BenchRow, SweepRow, build_row, shown, sweep_rows, write_csv, write_json
from harvest.errors import NoDeviceError, ParseError, UsageError
from harvest.progress import counter
from harvest.report import read_manifest
from harvest.report_html import read_json
from harvest.trust import NOT_MADE_HERE, made_here
from harvest.writer import write_file
from harvest.tune_first import TuneTable, rank_kernels

PROGRESS = "[harvest] "
BENCHING = "benching kernels"
NO_DEVICE = "timing needs a CUDA device and torch sees none here; check kernels on the CPU with TRITON_INTERPRET=1 python <module> --check (or harvest bench --sweep --check-only)"
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Selection:
    """What PATH selects: the extraction, its manifest, and the kernels (manifest entries) to bench."""

    extraction: Path
    manifest: dict
    kernels: tuple[tuple[dict, dict], ...]  # (graph entry, kernel entry)


def select(path: str | Path, pattern: str | None = None) -> Selection:
    """An extraction, a graph directory or a kernel module -> its extraction and the kernels to bench."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"not found: {path}; give an extraction directory, one of its graph directories or a kernel module")
    if path.is_file():
        extraction, graph_name, module = path.resolve().parent.parent, path.resolve().parent.name, path.resolve()
    elif (path / "manifest.json").is_file():
        extraction, graph_name, module = path.resolve(), None, None
    else:
        extraction, graph_name, module = path.resolve().parent, path.resolve().name, None
    if not (extraction / "manifest.json").is_file():
        raise UsageError(f"{path} is not in an extraction (no manifest.json at {extraction}); run `harvest extract` first")
    manifest = read_manifest(extraction)
    chosen = []
    for graph in manifest["graphs"]:
        if graph_name is not None and graph["name"] != graph_name:
            continue
        for kernel in graph["kernels"]:
            if module is not None and (not kernel["module"] or (extraction / kernel["module"]).resolve() != module):
                continue
            names = (kernel["name"], kernel["display_name"], kernel["module"] or "")
            if pattern and not any(fnmatch.fnmatchcase(n, pattern) or fnmatch.fnmatchcase(Path(n).stem, pattern) for n in names):
                continue
            chosen.append((graph, kernel))
    if not chosen:
        what = f"kernel matching {pattern!r}" if pattern else "kernel"
        raise UsageError(f"no {what} in {path} (graphs: {', '.join(g['name'] for g in manifest['graphs'])})")
    return Selection(extraction, manifest, tuple(chosen))


def require_cuda() -> None:
    import torch

    if not torch.cuda.is_available():
        raise NoDeviceError(NO_DEVICE)


def kernel_function_name(module_source: str, fallback: str) -> str:
    """The @triton.jit function's name in a module (what the GPU, the profiler and ncu call the kernel); `fallback`
    when the module is not one harvest can read."""
    from harvest.module.file import ModuleFileError, read_module_file

    try:
        return read_module_file(module_source, fallback).name
    except ModuleFileError:
        return fallback


# -- ncu -----------------------------------------------------------------------------------------------------------------


def ncu_command(module: Path, kernel: str, python: str = "python") -> list[str]:
    """Nsight Compute on one kernel: the module's --check launches it once on the recorded inputs; --kernel-name keeps
    ncu to that kernel (not the reference's ATen kernels), --set full collects every section, --clock-control none
    leaves the GPU's clocks as they are (ncu would lock them to base otherwise), -o writes <module>.ncu-rep next to
    the module."""
    report = module.with_suffix("")
    return ["ncu", "--set", "full", "--kernel-name", kernel, "--launch-count", "1", "--clock-control", "none", "-f",
            "-o", shown(report), python, shown(module), "--check"]


def ncu(selection: Selection, run: bool, on_progress: Progress) -> list[str]:
    """Print (or run) the ncu command of each selected kernel; returns the command lines."""
    lines = []
    modules = [(g, k) for g, k in selection.kernels if k["module"]]
    if run:
        require_cuda()
        if shutil.which("ncu") is None:
            raise UsageError("--ncu run: ncu is not on PATH (Nsight Compute, e.g. /usr/local/cuda/bin); --ncu prints the command to run where it is")
    for _, kernel in modules:
        module = selection.extraction / kernel["module"]
        name = kernel_function_name(module.read_text(encoding="utf-8"), kernel["display_name"])
        command = ncu_command(module, name, sys.executable if run else "python")
        lines.append(shlex.join(command))
        if not run:
            continue
        on_progress(f"ncu on {kernel['module']} (kernel {name}): {shlex.join(command)}")
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        log = module.with_suffix(".ncu.txt")
        write_file(log, done.stdout + done.stderr)
        report = module.with_suffix(".ncu-rep")
        state = f"report {shown(report)}" if done.returncode == 0 and report.exists() else f"ncu exited {done.returncode}, no report"
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        lines.append(f"  {state}; its output: {shown(log)}" + ("".join(f"\n    {t}" for t in tail) if done.returncode else ""))
    return lines


# -- the CUDA twin's seam -------------------------------------------------------------------------------------------------


def twin_path(extraction: Path, graph: str, display_name: str) -> Path:
    return extraction / graph / "twin" / f"{display_name}_twin.py"


def run_twin(path: Path, timeout: float = 600) -> dict:
    """`python TWIN --bench --json FILE` in a child; its median/p20/p80: timings["twin"] (else ["kernel"]) in the schema
    of timing.bench_result, or a [median, p20, p80] list under "twin_ms"."""
    with tempfile.TemporaryDirectory(prefix="harvest-twin-") as tmp:
        out = Path(tmp) / "twin.json"
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        try:
            done = subprocess.run([sys.executable, str(path), "--bench", "--json", str(out)], cwd=path.parent, env=env,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"--bench ran past {timeout:.0f} s"}
        if done.returncode != 0 or not out.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            return {"error": f"--bench exited {done.returncode}: {tail[0]}"}
        try:
            data = json.loads(out.read_text(encoding="utf-8"))
        except ValueError as exc:
            return {"error": f"its --json is not JSON ({exc})"}
    timings = data.get("timings") or {}
    figures = timings.get("twin") or timings.get("kernel") or {}
    if "median_ms" in figures:  # timing.bench_result's schema: timed by the lines harvest times with
        return {key: figures.get(key) for key in ("median_ms", "p20_ms", "p80_ms")}
    legacy = data.get("twin_ms")
    if isinstance(legacy, list) and len(legacy) == 3:  # [median, p20, p80] from the twin's own timer
        return {"median_ms": legacy[0], "p20_ms": legacy[1], "p80_ms": legacy[2], "note": "timed by the twin's own --bench, not harvest/bench/timing.py"}
    return {"error": "its --json has neither timings['twin'] (median_ms, p20_ms, p80_ms) nor twin_ms"}


# -- orchestration -----------------------------------------------------------------------------------------------------


@dataclass
class BenchResult:
    out_dir: Path
    rows: list[BenchRow] = field(default_factory=list)
    sweeps: dict[str, list[SweepRow]] = field(default_factory=dict)  # "graph/kernel" -> rows
    files: list[Path] = field(default_factory=list)
    env: dict = field(default_factory=dict)
    copy_gbps: float | None = None
    tables: list[tuple[str, str, str]] = field(default_factory=list)  # (label, eager table, extracted table)
    graph_notes: dict[str, str] = field(default_factory=dict)
    tune: TuneTable | None = None  # what to tune first, when bench timed a step (of every graph it could run)


def graph_permission(manifest: dict, graph: dict, extraction: Path, run_artifact: bool) -> str:
    """"" when Inductor's wrapper module of this graph may run, else why not."""
    raw = extraction / graph["raw"]
    if not raw.is_file():
        return f"no {graph['raw']}: Inductor's graph not timed"
    if manifest.get("mode", "") == "cpu-triton":
        return "captured on the CPU path: Inductor's graph runs on CPU tensors and is not timed here"
    if not run_artifact and not made_here(extraction):  # decided outside the extraction, never by its manifest
        return (f"{extraction} {NOT_MADE_HERE}: Inductor's graph is not timed; --trust-artifact runs its "
                "output_code.py (it executes the extraction's code)")
    if "device_str='cuda'" not in raw.read_text(encoding="utf-8", errors="replace"):
        return "Inductor's graph was not compiled for CUDA: not timed"
    return ""


def recorded_launches(extraction: Path) -> dict[tuple[str, str], dict]:
    """(graph, Inductor kernel) -> its recorded launch, from raw/capture.json (read as JSON data; {} without one)."""
    path = extraction / "raw" / "capture.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {(g.get("name"), name): launch for g in record.get("graphs", []) if isinstance(g, dict)
            for name, launch in (g.get("recorded") or {}).items() if isinstance(launch, dict)}


def inductor_arguments(launch: dict | None) -> list[dict] | None:
    """The positional arguments Inductor's own kernel object takes, as the run recorded them: {"tensor": True} for
    each tensor (the module's tensors, in order: renaming keeps the order) and {"value": v} for each scalar, the
    sizes the module's kernel fixes in its body and a FixedGrid's grid values included."""
    if not launch or not isinstance(launch.get("args"), list):
        return None
    return [{"tensor": True} if "tensor" in a else {"value": a.get("value")} for a in launch["args"] if isinstance(a, dict)]


# Ops whose random-number seed and offset (their argument positions here) are host tensors outside CUDA graph capture:
# the memory-efficient attention backward reads them on the host. Inductor's get_args() makes every example input on
# the graph's device, and such a call() dies in native code (SIGSEGV) at its first call on the H200 (torch 2.11).
HOST_SCALAR_ARGUMENTS = {
    "torch.ops.aten._scaled_dot_product_efficient_attention_backward.default": (7, 8),
    "torch.ops.aten._efficient_attention_backward.default": (11, 12),
}


def host_inputs(graph: dict, extraction: Path) -> list[int]:
    """Positions in call(args) of the graph inputs that must be host tensors (HOST_SCALAR_ARGUMENTS); the bench child
    moves get_args()'s example values there. The wrapper is parsed (read, never run) only where such an op is."""
    from harvest.parse import parse_output_code

    wanted = {arg for extern in graph.get("externs") or [] for i in HOST_SCALAR_ARGUMENTS.get(extern.get("op"), ())
              if i < len(extern.get("args") or []) for arg in [extern["args"][i]]}
    if not wanted:
        return []
    try:
        parsed = parse_output_code((extraction / graph["raw"]).read_text(encoding="utf-8"), name=graph["name"])
    except (OSError, ParseError):
        return []
    return [index for index, name in enumerate(parsed.inputs) if name in wanted]


def make_plan(selection: Selection, *, sweep: bool, sweep_max: int, profile: bool, run_artifact: bool, check_only: bool,
              out_dir: Path, graph_iterations: int = 20, sweep_rep_ms: float = 30.0) -> tuple[dict, dict[str, str]]:
    """The child's plan (JSON-ready), and per kernel id the reason it is not benched (not standalone, ...)."""
    from harvest.module.file import ModuleFileError, read_module_file
    from harvest.parse import parse_output_code
    from harvest.bench.sweep import SweepError, sweep_configs, sweep_space

    extraction = selection.extraction
    graphs: dict[str, dict] = {}
    jobs, skipped = [], {}
    recorded = recorded_launches(extraction)
    for index, (graph, kernel) in enumerate(selection.kernels):
        if graph["name"] not in graphs:
            reason = graph_permission(selection.manifest, graph, extraction, run_artifact)
            graphs[graph["name"]] = {
                "name": graph["name"],
                "raw": str(extraction / graph["raw"]),
                "run": not reason,
                "why_not": reason,
                "winners": {k["name"]: k["autotune"] for k in graph["kernels"] if k.get("autotune")},
                "kernels": [k["name"] for k in graph["kernels"]],
                "launches": {k["name"]: k.get("launches", 1) for k in graph["kernels"]},
                "host_inputs": host_inputs(graph, extraction) if not reason else [],
            }
        if not kernel["module"]:
            skipped[str(index)] = f"not standalone: {kernel['standalone_reason']}"
            continue
        job = {
            "id": index,
            "graph": graph["name"],
            "inductor": kernel["name"],
            "display_name": kernel["display_name"],
            "module": str(extraction / kernel["module"]),
            "label": f"{graph['name']}/{kernel['display_name']}",
            "grid": (kernel.get("recorded") or {}).get("grid"),
            "inductor_args": inductor_arguments(recorded.get((graph["name"], kernel["name"]))),
            "sweep": None,
        }
        if sweep:
            try:
                parsed = parse_output_code((extraction / graph["raw"]).read_text(encoding="utf-8"), name=graph["name"])
                module = read_module_file((extraction / kernel["module"]).read_text(encoding="utf-8"), kernel["module"])
                space = sweep_space(parsed.kernel(kernel["name"]), module)
                job["sweep"] = sweep_configs(space, sweep_max)
                job["sweep_blocks"] = [b.name for b in space.blocks]
                job["sweep_notes"] = list(space.notes)
            except (SweepError, ModuleFileError) as exc:
                job["sweep_notes"] = [f"not swept: {exc}"]
        if check_only and not job["sweep"]:
            skipped[str(index)] = "; ".join(job.get("sweep_notes", [])) or "nothing to check"
            continue
        jobs.append(job)
    plan = {
        "device": "cpu" if check_only else "cuda",
        "check_only": check_only,
        "profile": profile,
        "trace": str(out_dir / "trace.json") if profile else None,
        "graph_iterations": graph_iterations,
        "sweep_rep_ms": sweep_rep_ms,
        "graphs": list(graphs.values()),
        "kernels": jobs,
    }
    return plan, skipped


def child_env(check_only: bool) -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    if check_only:
        env["TRITON_INTERPRET"] = "1"  # the interpreter runs the kernels on the CPU: correctness only, no times
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def compile_ahead(plan: dict, plan_path: Path, env: dict, on_progress: Progress, timeout: float = 600) -> None:
    """Compile every kernel and swept config in parallel processes first (`bench_child --warm`): Triton compiles one
    kernel in about a second of CPU, and the timing child, which must run alone, then loads them from its cache."""
    items = len(plan["kernels"]) + sum(len(job.get("sweep") or []) for job in plan["kernels"])
    workers = min(8, max(1, (os.cpu_count() or 2) // 2), items)
    if items < 4 or workers < 2:
        return
    on_progress(f"compiling {items} kernels and configs in {workers} processes before timing (Triton's cache)")
    children = [subprocess.Popen([sys.executable, "-m", "harvest.bench.child", "--warm", str(plan_path), str(k), str(workers)],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for k in range(workers)]
    for child in children:
        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_children(plan: dict, work: Path, on_progress: Progress, quiet_output: bool = False) -> dict:
    """Run the bench child until every kernel has a result. A child that dies (a sticky CUDA error ends the process's
    use of the GPU) loses the kernel it was on; a new child continues with the rest, as long as each one gets further."""
    plan_path, results_path = work / "plan.json", work / "results.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    env = child_env(plan["check_only"])
    if not plan["check_only"]:
        compile_ahead(plan, plan_path, env, on_progress)
    empty: dict = {"graphs": {}, "kernels": {}}
    done_before = 0
    labels = {job["label"] for job in plan["kernels"]}
    count, started = counter(on_progress), set()
    count(BENCHING, 0, len(labels))
    while True:
        child = subprocess.Popen([sys.executable, "-m", "harvest.bench.child", str(plan_path), str(results_path)],
                                 env=env, stderr=subprocess.PIPE, text=True, errors="replace")
        tail: list[str] = []
        assert child.stderr is not None
        for line in child.stderr:
            if line.startswith(PROGRESS):
                message = line[len(PROGRESS):].rstrip("\n")
                on_progress(message)
                if message in labels and message not in started:  # the child starts a kernel: the one before is done
                    count(BENCHING, len(started), len(labels))
                    started.add(message)
            else:
                tail = (tail + [line])[-30:]
                if not quiet_output:
                    sys.stderr.write(line)
        code = child.wait()
        if code == 0:
            count(BENCHING, len(labels), len(labels))
        results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else dict(empty)
        if code == 0:
            return results
        why = next((line.strip() for line in reversed(tail) if line.strip()), "") or f"exit status {code}"
        if code < 0:  # a signal (a crash in native code): its name says more than the last line of a warning
            why = f"killed by {signal_name(-code)}"
        graph = results.pop("current_graph", None)
        if graph is not None:  # it died in the graph's call() under the profiler: the next child leaves that out
            results["graphs"][graph] = {"error": f"the bench process died running Inductor's call() under the profiler ({why})"}
        current = results.pop("current", None)
        if current is not None:
            entry = results["kernels"].setdefault(str(current), {"errors": {}})
            entry.setdefault("errors", {})["child"] = f"the bench process died on this kernel: {why}"
        done = len(results["kernels"]) + len(results["graphs"])
        left = [job for job in plan["kernels"] if str(job["id"]) not in results["kernels"]]
        if not left:
            return results
        if done <= done_before:
            results["error"] = f"the bench process failed: {why}"
            return results
        done_before = done
        results_path.write_text(json.dumps(results), encoding="utf-8")
        on_progress(f"the bench process died ({why}); a new one continues with the {len(left)} kernel(s) left")


def refresh_after_bench(extraction: Path, manifest: dict, on_progress: Progress) -> list[Path]:
    """report.md and report.html again, now with the measured "What to tune first"; the manifest's record of them."""
    from harvest.report_html import refresh_reports
    from harvest.writer import write_manifest

    written, notes = refresh_reports(extraction, manifest)
    for note in notes:
        on_progress(note)
    if written:
        write_manifest(extraction, manifest)
    return written


def bench(path: str | Path, *, pattern: str | None = None, sweep: bool = False, sweep_max: int = 64, profile: bool = False,
          run_artifact: bool = False, check_only: bool = False, out_dir: str | Path | None = None,
          on_progress: Progress = lambda message: None) -> BenchResult:
    """Bench the kernels PATH selects; write bench.csv/json (and sweeps, profile) under out_dir; return the rows."""
    from harvest.module.file import read_module_file
    from harvest.bench.sweep import plot_sweep

    if check_only and not sweep:
        raise UsageError("--check-only checks each --sweep config against the record on the CPU; add --sweep")
    selection = select(path, pattern)
    if not check_only:
        require_cuda()
    out = Path(out_dir) if out_dir else selection.extraction / "bench"
    out.mkdir(parents=True, exist_ok=True)
    plan, skipped = make_plan(selection, sweep=sweep, sweep_max=sweep_max, profile=profile, run_artifact=run_artifact,
                              check_only=check_only, out_dir=out.resolve())
    for graph in plan["graphs"]:
        if graph["why_not"] and not check_only:
            on_progress(f"{graph['name']}: {graph['why_not']}")
    with tempfile.TemporaryDirectory(prefix="harvest-bench-") as tmp:
        results = run_children(plan, Path(tmp), on_progress) if plan["kernels"] else {"graphs": {}, "kernels": {}}
    result = BenchResult(out_dir=out, env=results.get("env", {}), copy_gbps=results.get("copy_gbps"))
    jobs = {str(job["id"]): job for job in plan["kernels"]}
    graph_plans = {g["name"]: g for g in plan["graphs"]}
    for index, (graph, kernel) in enumerate(selection.kernels):
        key = str(index)
        entry = results["kernels"].get(key, {})
        job = jobs.get(key)
        config = ""
        if kernel["module"]:
            try:
                config = json.dumps(dict(read_module_file((selection.extraction / kernel["module"]).read_text(encoding="utf-8"), kernel["module"]).config))
            except (OSError, UnicodeDecodeError, ParseError):
                config = "unreadable CONFIG"
        graph_result = dict(results["graphs"].get(graph["name"], {}))
        if graph_plans[graph["name"]]["why_not"]:
            graph_result["skipped"] = graph_plans[graph["name"]]["why_not"]
        twin = None
        twin_file = twin_path(selection.extraction, graph["name"], kernel["display_name"])
        if not check_only and job is not None and twin_file.is_file():
            on_progress(f"{job['label']}: the CUDA twin ({shown(twin_file)} --bench)")
            twin = run_twin(twin_file)
        reason = skipped.get(key, "" if job is not None and key in results["kernels"] else "not run: " + results.get("error", "no result"))
        if not check_only:
            result.rows.append(build_row(graph, kernel, entry, graph_result, twin, result.copy_gbps, config, reason))
        if job is not None and entry.get("sweep"):
            result.sweeps[job["label"]] = sweep_rows(job, entry["sweep"], result.copy_gbps, entry)
        if entry.get("eager_table") or entry.get("extracted_table"):
            result.tables.append((job["label"] if job else key, entry.get("eager_table", ""), entry.get("extracted_table", "")))
    if not check_only:
        write_csv(out / "bench.csv", result.rows)
        write_json(out / "bench.json", {
            "schema": "harvest.bench.command-table/1",
            "extraction": shown(selection.extraction),
            "selected": str(path),
            "env": result.env,
            "copy_gbps": result.copy_gbps,
            "rows": [asdict(row) for row in result.rows],
            "graphs": {name: {k: v for k, v in g.items() if k != "traceback"} for name, g in sorted(results["graphs"].items())},
        })
        result.files += [out / "bench.csv", out / "bench.json"]
        whole = len(selection.kernels) == sum(len(g.get("kernels", [])) for g in selection.manifest.get("graphs", []))
        if whole and out.resolve() == (selection.extraction / "bench").resolve():
            result.files += refresh_after_bench(selection.extraction, selection.manifest, on_progress)
            table = rank_kernels(selection.manifest, read_json(selection.extraction / "raw" / "capture.json"),
                                 read_json(out / "bench.json"))
            result.tune = table if table.measured else None
    for label, rows in result.sweeps.items():
        base = out / f"{label}.sweep"
        write_csv(Path(f"{base}.csv"), rows)
        result.files.append(Path(f"{base}.csv"))
        if not check_only:
            job = next(j for j in plan["kernels"] if j["label"] == label)
            eager = next((r for r in result.rows if f"{r.graph}/{r.kernel}" == label), None)
            band = (eager.eager_ms, eager.eager_p20_ms, eager.eager_p80_ms) if eager and eager.eager_ms else None
            title = f"{label} ({result.env.get('gpu', 'GPU')}): {', '.join(job.get('sweep_notes') or []) or 'all swept'}"
            made = plot_sweep(rows, title, band, Path(f"{base}.png"), tuple(job.get("sweep_blocks") or ()))
            if made is not None:
                result.files.append(made)
    if result.tables:
        text = []
        for label, eager_table, extracted_table in result.tables:
            text += [f"== {label}: eager reference ==", eager_table, f"== {label}: extracted kernel ==", extracted_table]
        write_file(out / "profile.txt", "\n".join(text) + "\n")
        result.files.append(out / "profile.txt")
        if (out / "trace.json").exists():
            result.files.append(out / "trace.json")
    return result
