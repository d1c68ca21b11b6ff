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
the Nsight Compute command for each kernel; its report goes next to the module (ncu.py).

This module puts the steps in order: plan.py (what PATH selects, the child's plan), children.py (the processes
that time), then the rows, tables and plots (output.py, sweep.py) written under bench/.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harvest.bench.children import require_cuda, run_children, run_twin, twin_path
from harvest.bench.ncu import kernel_function_name as kernel_function_name  # test_module_file.py imports it here
from harvest.bench.output import BenchRow, SweepRow, build_row, shown, sweep_rows, write_csv, write_json
from harvest.bench.plan import Selection, make_plan, select
from harvest.bench.plan import inductor_arguments as inductor_arguments  # test_kernel_kinds_h200.py imports it here
from harvest.bench.plan import recorded_launches as recorded_launches  # test_kernel_kinds_h200.py imports it here
from harvest.errors import ParseError, UsageError
from harvest.progress import OnProgress
from harvest.report_html import read_json, refresh_reports
from harvest.tune_first import TuneTable, rank_kernels
from harvest.writer import write_file, write_manifest


@dataclass
class BenchResult:
    """What `harvest bench` measured and wrote: a row per kernel, sweep rows per swept kernel, the files."""

    out_dir: Path
    rows: list[BenchRow] = field(default_factory=list)
    sweeps: dict[str, list[SweepRow]] = field(default_factory=dict)  # "graph/kernel" -> rows
    files: list[Path] = field(default_factory=list)
    env: dict = field(default_factory=dict)
    copy_gbps: float | None = None
    tables: list[tuple[str, str, str]] = field(default_factory=list)  # (label, eager table, extracted table)
    graph_notes: dict[str, str] = field(default_factory=dict)
    tune: TuneTable | None = None  # what to tune first, when bench timed a step (of every graph it could run)


def bench(path: str | Path, *, pattern: str | None = None, sweep: bool = False, sweep_max: int = 64, profile: bool = False,
          run_artifact: bool = False, check_only: bool = False, out_dir: str | Path | None = None,
          on_progress: OnProgress = lambda message: None) -> BenchResult:
    """Bench the kernels PATH selects; write bench.csv/json (and sweeps, profile) under out_dir; return the rows."""
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
    result = collect_rows(selection, plan, skipped, results, out, check_only, on_progress)
    if not check_only:
        write_tables(result, selection, str(path), results["graphs"], on_progress)
    write_sweeps(result, plan, check_only)
    write_profile(result)
    return result


def collect_rows(selection: Selection, plan: dict, skipped: dict[str, str], results: dict, out: Path, check_only: bool,
                 on_progress: OnProgress) -> BenchResult:
    """The children's results as rows (one per selected kernel, timing the CUDA twins on the way), sweep rows and
    profiler tables."""
    from harvest.module.file import read_module_file

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
    return result


def write_tables(result: BenchResult, selection: Selection, selected: str, graphs: dict, on_progress: OnProgress) -> None:
    """bench.csv and bench.json; when every kernel of the extraction was benched into its own bench/, the reports
    again, with "What to tune first" measured."""
    out = result.out_dir
    write_csv(out / "bench.csv", result.rows)
    write_json(out / "bench.json", {
        "schema": "harvest.bench.command-table/1",
        "extraction": shown(selection.extraction),
        "selected": selected,
        "env": result.env,
        "copy_gbps": result.copy_gbps,
        "rows": [asdict(row) for row in result.rows],
        "graphs": {name: {k: v for k, v in g.items() if k != "traceback"} for name, g in sorted(graphs.items())},
    })
    result.files += [out / "bench.csv", out / "bench.json"]
    whole = len(selection.kernels) == sum(len(g.get("kernels", [])) for g in selection.manifest.get("graphs", []))
    if whole and out.resolve() == (selection.extraction / "bench").resolve():
        result.files += refresh_after_bench(selection.extraction, selection.manifest, on_progress)
        table = rank_kernels(selection.manifest, read_json(selection.extraction / "raw" / "capture.json"),
                             read_json(out / "bench.json"))
        result.tune = table if table.measured else None


def refresh_after_bench(extraction: Path, manifest: dict, on_progress: OnProgress) -> list[Path]:
    """report.md and report.html again, now with the measured "What to tune first"; the manifest's record of them."""
    written, notes = refresh_reports(extraction, manifest)
    for note in notes:
        on_progress(note)
    if written:
        write_manifest(extraction, manifest)
    return written


def write_sweeps(result: BenchResult, plan: dict, check_only: bool) -> None:
    """Per swept kernel its .sweep.csv, and on a GPU its .sweep.png."""
    from harvest.bench.sweep import plot_sweep

    out = result.out_dir
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


def write_profile(result: BenchResult) -> None:
    """The profiler's op tables (eager reference and extracted kernel) as profile.txt; trace.json when it was written."""
    out = result.out_dir
    if result.tables:
        text = []
        for label, eager_table, extracted_table in result.tables:
            text += [f"== {label}: eager reference ==", eager_table, f"== {label}: extracted kernel ==", extracted_table]
        write_file(out / "profile.txt", "\n".join(text) + "\n")
        result.files.append(out / "profile.txt")
        if (out / "trace.json").exists():
            result.files.append(out / "trace.json")
