"""`harvest run TARGET --with EXTRACTION`: the target run twice in one invocation, with Inductor's kernels and with the
edited modules in their place, and every graph's outputs compared between the two.

Both runs start fresh (caches off, as `harvest extract` runs), with the same script, arguments and seeds. Each
records every kernel's first launch (its outputs after it ran) and saves what each graph's first call returned; the
backward graphs' outputs are the gradients of the forward's inputs. Outputs equal bit for bit, or within the
tolerances, pass; the first output that differs is named with the first kernel (in launch order) whose outputs
differ between the two records: the lookup that says which edit changed the model. Results go to
EXTRACTION/runs/<n>/run.json and run.md, and the run is listed in the manifest and report.md ("Runs with edits");
nothing else in the extraction is touched.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harvest.capture.runner import RunOutcome, run_target
from harvest.capture.swap import kernel_text
from harvest.errors import Interrupted, ResultsDiffer, SwapError, TargetError, TimeoutError_, UsageError
from harvest.report import read_manifest, render_report
from harvest.run.plan import Swap, plan_swaps
from harvest.trust import NOT_MADE_HERE, made_here
from harvest.writer import sha256, write_file, write_manifest

RUNS = "runs"


@dataclass(frozen=True)
class OutputCheck:
    graph: str
    index: int  # the position in what the graph's call returned
    dtype: str
    shape: tuple[int, ...]
    verdict: str  # "bit for bit", "within tolerance", "differs"
    max_abs_diff: float | None = None
    detail: str = ""


@dataclass
class RunResult:
    number: int
    directory: Path
    swaps: tuple[Swap, ...]
    checks: list[OutputCheck] = field(default_factory=list)
    first_difference: OutputCheck | None = None
    culprit: str = ""  # "g0_forward/triton_poi_...(module path)": the first kernel whose outputs differ
    device: str = ""
    seconds: tuple[float, float] = (0.0, 0.0)
    target_failed: str = ""  # the target's own failure with the edited kernels (its check of its results, say)
    timing: dict = field(default_factory=dict)  # harvest.capture.ab_timing's figures (GPU), or {"error": why not}
    launch_paths: dict[str, str] = field(default_factory=dict)  # module -> "static" | "direct[: why]" | "jit: why" (capture.launcher)
    cuda_graphs: tuple[str, ...] = ()  # graphs the run with the edits captured into CUDA graphs (reduce-overhead)

    @property
    def equal(self) -> bool:
        return self.first_difference is None and not self.target_failed


def run_with(target: Path, extraction: Path, *, names: Sequence[str] = (), rtol: float | None = None,
             atol: float | None = None, args: Sequence[str] = (), timeout: float | None = None, timing: bool = True, trust: bool = False,
             on_progress: Callable[[str], None] = lambda line: None) -> RunResult:
    """Run `target` with Inductor's kernels, then with the extraction's edited modules; compare; write runs/<n>/."""
    if (rtol is None) != (atol is None):
        raise UsageError("give --rtol and --atol together (or neither: torch.testing's defaults for each dtype)")
    manifest = read_manifest(extraction)
    if manifest.get("ranks"):
        raise UsageError(f"{extraction} is a torchrun job's extraction: `harvest run --with` runs one process and cannot "
                         "launch its ranks yet; check an edited module with its own --check (or extract the script without torchrun)")
    record = _capture_record(extraction)
    _check_target(target, manifest, extraction)
    if not trust and not made_here(extraction):  # decided outside the extraction, never by its manifest
        raise UsageError(f"{extraction} {NOT_MADE_HERE}: extract the target here (`harvest extract {target} -o DIR`), "
                         "or pass --trust-artifact to import its modules")
    device = "cuda" if record.get("mode") == "cuda" else "cpu"
    indices = {g["name"]: int(g["index"]) for g in record.get("graphs", []) if "name" in g and "index" in g}
    modules = {k["module"]: (extraction / k["module"]).read_text(encoding="utf-8")
               for g in manifest["graphs"] for k in g["kernels"] if k.get("module") and (extraction / k["module"]).is_file()}
    wrappers = {g["name"]: (extraction / g["raw"]).read_text(encoding="utf-8")
                for g in manifest["graphs"] if g.get("raw") and (extraction / g["raw"]).is_file()}
    swaps = plan_swaps(manifest, indices, modules, wrappers, names)
    for swap in swaps:
        on_progress(f"{swap.module} ({'edited' if swap.edited else 'as extracted'}) in place of {swap.graph}/{swap.kernel}")
    names_of = {index: name for name, index in indices.items()}

    with tempfile.TemporaryDirectory(prefix="harvest-run-") as tmp:
        work = Path(tmp)
        spec = work / "swaps.json"
        spec.write_text(json.dumps([s.to_json(str((extraction / s.module).resolve())) for s in swaps]), encoding="utf-8")
        runs = {}
        for label, swapped in (("Inductor's kernels", None), ("the edited kernels", spec)):
            key = "edited" if swapped else "inductor"
            on_progress(f"running {target} with {label}" + (" (CPU path: the Triton interpreter)" if device == "cpu" else ""))
            runs[key] = run_target(target, tuple(args), timeout=timeout, device=device, on_progress=on_progress,
                                   log_path=work / f"{key}.log", record_dir=work / f"{key}-records",
                                   swaps=swapped, outputs_dir=work / f"{key}-outputs",
                                   timing_out=work / "timing.json" if swapped and timing and device == "cuda" else None)
            failed = _check_outcome(runs[key], label, swaps)
            if failed and not swapped:
                raise TargetError(f"the target failed with Inductor's own kernels, before any edit: {failed}")
        checks = compare_runs(work / "inductor-outputs", work / "edited-outputs", names_of, rtol, atol)
        first = next((c for c in checks if c.verdict == "differs"), None)
        culprit = first_changed_kernel(work / "inductor-records", work / "edited-records",
                                       runs["edited"].launch_order, names_of, swaps,
                                       (checksums(runs["inductor"]), checksums(runs["edited"])),
                                       atomic_kernels(manifest, wrappers, indices)) if first or failed else ""
        times = _read_timing(work / "timing.json", device, timing, failed)
    number, directory = _next_run(extraction)
    events = runs["edited"].swap_events
    paths = {e["module"]: e.get("launch", "") for e in events if e["event"] == "swapped"}
    graphed = tuple(dict.fromkeys(names_of.get(e["graph"], str(e["graph"])) for e in events if e["event"] == "cuda_graph"))
    result = RunResult(number, directory, swaps, checks, first, culprit, device,
                       (runs["inductor"].seconds, runs["edited"].seconds), failed, times,
                       {swap.module: _module_path(paths, swap, extraction) for swap in swaps}, graphed)
    _write(result, target, extraction, args, rtol, atol)
    _list_in_report(result, extraction)
    return result


def _module_path(paths: dict[str, str], swap: Swap, extraction: Path) -> str:
    """How the run launched a swapped module's kernel, as the child said (its events name the module's absolute
    path)."""
    return paths.get(str((extraction / swap.module).resolve()), "")


def launch_line(result: RunResult) -> str:
    """One line: how the edited kernels were launched, and whether inside CUDA graphs."""
    paths = list(result.launch_paths.values())
    why = sorted({p.removeprefix("jit: ") for p in paths if p.startswith("jit: ")})
    not_static = sorted({p.removeprefix("direct: ") for p in paths if p.startswith("direct: ")})
    compiled = "Launch path: each edited kernel compiled once per specialization and launched"
    if why:
        line = f"Launch path: through Triton's JIT at every launch ({'; '.join(why)})."
    elif paths and all(p == "static" for p in paths):
        line = (f"{compiled} by torch's static CUDA launcher, as Inductor launches its own (harvest.capture.launcher).")
    elif paths and all(p == "static" or p.startswith("direct") for p in paths):
        static = sum(p == "static" for p in paths)
        line = (f"{compiled} by Triton's compiled launcher, not through the JIT (harvest.capture.launcher)"
                + (f"; {static} of {len(paths)} by torch's static CUDA launcher, as Inductor launches its own" if static else "")
                + (f"; not by the static launcher: {'; '.join(not_static)}" if not_static else "") + ".")
    else:
        line = ""
    if result.cuda_graphs:
        line += (f" The run captured {', '.join(result.cuda_graphs)} into CUDA graphs (mode=\"reduce-overhead\"): "
                 "the edited kernels ran inside them.")
    return line.strip()


def _read_timing(path: Path, device: str, asked: bool, failed: str) -> dict:
    """The child's A/B figures, or why there are none."""
    if device != "cuda":
        return {"error": "not measured on the CPU path (the Triton interpreter's times are not GPU times): correctness only"}
    if not asked:
        return {"error": "not measured (--no-timing)"}
    if failed:
        return {"error": "not measured: the target failed with the edited kernels"}
    if not path.is_file():
        return {"error": "not measured: the run with the edited kernels wrote no timing"}
    return json.loads(path.read_text(encoding="utf-8"))


def _capture_record(extraction: Path) -> dict:
    path = extraction / "raw" / "capture.json"
    if not path.is_file():
        raise UsageError(f"{extraction} has no raw/capture.json: `harvest run` needs an extraction made by running a "
                         "target (`harvest extract TARGET -o DIR`)")
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("mode") not in ("cuda", "cpu-triton"):
        raise UsageError(f"{extraction} was read from an artifact, not made by running a target: extract the target "
                         "itself (`harvest extract TARGET -o DIR`) to run it with edits")
    return record


def _check_target(target: Path, manifest: dict, extraction: Path) -> None:
    if not target.is_file():
        raise UsageError(f"no such script: {target}")
    extracted = Path(str(manifest.get("target", "")))
    if extracted.resolve() != target.resolve() and extracted.name != target.name:
        raise UsageError(f"{extraction} holds the extraction of {extracted}, not of {target}: pass the extraction of "
                         f"{target} (or extract it first)")


def _check_outcome(outcome: RunOutcome, label: str, swaps: tuple[Swap, ...]) -> str:
    """One line for a run that cannot be compared (a refused or failing swap, a swap never made); the target's own
    failure, which is returned ("" when it ran to its end): with the edits, a result of the comparison."""
    for event in outcome.swap_events:
        if event["event"] in ("swap_refused", "swap_failed"):
            why = event.get("reason") or event.get("error", "")
            raise SwapError(f"{event['module']}: {why}; the run with edits stopped there, the extraction is unchanged")
    if outcome.status == "no-cuda":
        raise UsageError("this extraction was made on a GPU and torch sees none here: run it where it was made")
    failed = ""
    if outcome.status == "timeout":
        raise TimeoutError_(f"the run with {label} passed --timeout: nothing was compared, the extraction is unchanged")
    if outcome.status == "interrupted":
        raise Interrupted(f"the run with {label} was stopped (Ctrl-C): nothing was compared, the extraction is unchanged")
    if outcome.status == "crashed":
        raise TargetError(f"the target's process died in the run with {label}: {outcome.error.strip()[-200:]}")
    if outcome.status not in ("ok",) and not (outcome.status == "exit" and outcome.exit_code == 0):
        failed = next((line.strip() for line in reversed(outcome.error.strip().splitlines()) if line.strip()), outcome.status)
    if "Inductor" in label:
        return failed
    made = {(e["graph"], e["kernel"]) for e in outcome.swap_events if e["event"] == "swapped"}
    for swap in swaps:
        if (swap.graph_index, swap.kernel) not in made and not failed:
            raise SwapError(f"{swap.module}: graph {swap.graph} launched no kernel {swap.kernel} this time (the target "
                            "compiled other graphs or kernels than when it was extracted): re-extract it")
    return failed


def compare_runs(before: Path, after: Path, graph_names: dict[int, str], rtol: float | None, atol: float | None
                 ) -> list[OutputCheck]:
    """Every output of every graph's first call, compared between the two runs, in graph order."""
    import torch

    checks = []
    indices = sorted({int(p.stem) for p in before.glob("*.pt")} | {int(p.stem) for p in after.glob("*.pt")})
    for index in indices:
        graph = graph_names.get(index, f"g{index}")
        a = torch.load(before / f"{index}.pt", weights_only=True) if (before / f"{index}.pt").is_file() else None
        b = torch.load(after / f"{index}.pt", weights_only=True) if (after / f"{index}.pt").is_file() else None
        if a is None or b is None or len(a) != len(b):
            checks.append(OutputCheck(graph, -1, "", (), "differs", None, "the graph returned other outputs"))
            continue
        for position, (x, y) in enumerate(zip(a, b)):
            if x is None and y is None:
                continue
            checks.append(_compare(graph, position, x, y, rtol, atol))
    return checks


def _compare(graph: str, position: int, x, y, rtol: float | None, atol: float | None) -> OutputCheck:
    import torch

    if x is None or y is None or x.shape != y.shape or x.dtype != y.dtype:
        return OutputCheck(graph, position, str(getattr(x, "dtype", "")).removeprefix("torch."),
                           tuple(getattr(x, "shape", ())), "differs", None, "another shape or dtype")
    dtype, shape = str(x.dtype).removeprefix("torch."), tuple(x.shape)
    if torch.equal(x, y) or (x.is_floating_point() and torch.equal(x.isnan(), y.isnan())
                             and torch.equal(x.nan_to_num(), y.nan_to_num())):
        return OutputCheck(graph, position, dtype, shape, "bit for bit", 0.0)
    diff = (x.double() - y.double()).abs()
    largest = float(diff.nan_to_num(float("inf")).max()) if diff.numel() else 0.0
    try:
        torch.testing.assert_close(y, x, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as exc:
        detail = next((line.strip() for line in str(exc).splitlines() if "Mismatched elements" in line), "")
        return OutputCheck(graph, position, dtype, shape, "differs", largest, detail)
    return OutputCheck(graph, position, dtype, shape, "within tolerance", largest)


def checksums(outcome: RunOutcome) -> dict[tuple[int, str], tuple[int, ...]]:
    """(graph, kernel) -> the checksums of its storages after its first launch, for launches whose data the record
    did not save (over the per-kernel cap): what tells their results apart then."""
    return {(graph, name): launch.checksums for graph, kernels in outcome.recorded.items()
            for name, launch in kernels.items() if launch.checksums}


def first_changed_kernel(before: Path, after: Path, order: dict[int, tuple[str, ...]], graph_names: dict[int, str],
                         swaps: tuple[Swap, ...],
                         sums: tuple[dict, dict] = ({}, {}), atomic: frozenset[tuple[int, str]] = frozenset()) -> str:
    """The first kernel, in launch order, whose recorded outputs differ between the two runs ("" when none does):
    its saved data when both runs saved it, else the checksums of its storages after the launch. `atomic`: the
    (graph, kernel)s whose sums are atomic adds, made in the order the GPU runs them (another each run)."""
    import torch

    modules = {(s.graph_index, s.kernel): s.module for s in swaps}
    for graph in sorted(order):
        for kernel in order[graph]:
            a, b = before / str(graph) / f"{kernel}.pt", after / str(graph) / f"{kernel}.pt"
            if a.is_file() and b.is_file():
                x, y = torch.load(a, weights_only=True)["after"], torch.load(b, weights_only=True)["after"]
                same = len(x) == len(y) and all((p is None) == (q is None) and (p is None or torch.equal(p, q))
                                                for p, q in zip(x, y))
            elif (graph, kernel) in sums[0] and (graph, kernel) in sums[1]:
                same = sums[0][(graph, kernel)] == sums[1][(graph, kernel)]
            else:
                continue
            if not same:
                module = modules.get((graph, kernel))
                edited = any(s.edited for s in swaps if (s.graph_index, s.kernel) == (graph, kernel))
                note = ""
                if (graph, kernel) in atomic:
                    note = ("; its atomic adds sum in the order the GPU runs them, another each run" +
                            (": part of the difference may be that order's" if edited else
                             ", and it is not edited: the difference is that order's (--rtol/--atol accept it)"))
                return f"{graph_names.get(graph, graph)}/{kernel}" + (f" ({module})" if module else " (not edited)") + note
    return ""


def atomic_kernels(manifest: dict, wrappers: dict[str, str], indices: dict[str, int]) -> frozenset[tuple[int, str]]:
    """(graph, kernel) of every Triton kernel of the extraction whose source, as its graph's wrapper holds it, calls
    tl.atomic_*."""
    return frozenset((indices[g["name"]], k["name"]) for g in manifest["graphs"] if g["name"] in indices
                     for k in g["kernels"] if "tl.atomic_" in kernel_text(wrappers.get(g["name"], ""), k["name"]))


def _next_run(extraction: Path) -> tuple[int, Path]:
    runs = extraction / RUNS
    taken = [int(p.name) for p in runs.glob("*") if p.is_dir() and p.name.isdigit()] if runs.is_dir() else []
    number = max(taken, default=0) + 1
    return number, runs / str(number)


def _write(result: RunResult, target: Path, extraction: Path, args: Sequence[str], rtol, atol) -> None:
    result.directory.mkdir(parents=True, exist_ok=False)
    data = {
        "schema": "harvest.run/1",
        "target": str(target),
        "args": list(args),
        "device": result.device,
        "tolerances": {"rtol": rtol, "atol": atol} if rtol is not None else "torch.testing defaults per dtype",
        "swaps": [{"graph": s.graph, "kernel": s.kernel, "module": s.module, "edited": s.edited} for s in result.swaps],
        "equal": result.equal,
        "target_failed": result.target_failed or None,
        "first_difference": asdict(result.first_difference) if result.first_difference else None,
        "first_changed_kernel": result.culprit or None,
        "outputs": [asdict(c) for c in result.checks],
        "launch": {"paths": dict(sorted(result.launch_paths.items())), "cuda_graphs": list(result.cuda_graphs)},
        "timing": timing_json(result),
    }
    write_file(result.directory / "run.json", json.dumps(data, indent=1) + "\n")
    write_file(result.directory / "run.md", run_markdown(result, target))


def _list_in_report(result: RunResult, extraction: Path) -> None:
    """The run, listed in the manifest's "runs" and report.md's "Runs with edits" (report.md kept when edited)."""
    manifest = read_manifest(extraction)
    runs = [r for r in manifest.get("runs") or [] if isinstance(r, dict) and r.get("number") != result.number]
    runs.append({"number": result.number, "report": f"{RUNS}/{result.number}/run.md", "equal": result.equal,
                 "modules": [s.module for s in result.swaps]})
    manifest["runs"] = runs
    generated = dict(manifest.get("generated_files") or {})
    report_path = extraction / "report.md"
    recorded = generated.get("report.md")
    if not (report_path.exists() and recorded and sha256(report_path.read_text(encoding="utf-8")) != recorded):
        report = render_report(manifest)
        write_file(report_path, report)
        generated["report.md"] = sha256(report)
    manifest["generated_files"] = dict(sorted(generated.items()))
    write_manifest(extraction, manifest)


def run_markdown(result: RunResult, target: Path) -> str:
    """run.md: what ran in place of what, the verdict, and every output's comparison."""
    lines = [f"# harvest run {result.number}: {target} with edited kernels", ""]
    lines += ["| graph | Inductor's kernel | module | edited |", "|---|---|---|---|"]
    lines += [f"| {s.graph} | {s.kernel} | {s.module} | {'yes' if s.edited else 'no (-k)'} |" for s in result.swaps]
    lines.append("")
    if launch_line(result):
        lines += [launch_line(result), ""]
    counts = {v: sum(1 for c in result.checks if c.verdict == v) for v in ("bit for bit", "within tolerance", "differs")}
    verdict = "**equal**" if result.equal else "**differ**"
    lines.append(f"Results {verdict}: {len(result.checks)} graph outputs compared, " + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".")
    if result.target_failed:
        lines.append(f"The target failed with the edited kernels: `{result.target_failed}`.")
    if result.first_difference:
        d = result.first_difference
        lines.append(f"First differing output: {d.graph} output {d.index} ({d.dtype}{list(d.shape)}), "
                     f"max abs diff {d.max_abs_diff}; the first kernel whose outputs differ: {result.culprit or 'not found'}.")
    lines += ["", "| graph | output | dtype | shape | result | max abs diff |", "|---|---|---|---|---|---|"]
    lines += [f"| {c.graph} | {c.index} | {c.dtype} | {list(c.shape)} | {c.verdict} | "
              f"{'' if c.max_abs_diff is None else f'{c.max_abs_diff:.3g}'} |" for c in result.checks]
    lines += ["", *timing_markdown(result)]
    return "\n".join(lines) + "\n"


def timing_json(result: RunResult) -> dict:
    """run.json's timing: the child's figures, graphs and modules named as the extraction names them."""
    timing = result.timing
    if not timing or "error" in timing:
        return {"measured": False, "why": timing.get("error", "not measured")}
    swaps = {(s.graph_index, s.kernel): s for s in result.swaps}
    kernels = []
    for k in timing["kernels"]:
        swap = swaps.get((k["graph"], k["kernel"]))
        kernels.append({**k, "graph": swap.graph if swap else k["graph"], "module": swap.module if swap else ""})
    return {"measured": True,
            "how": "the step: CUDA events around every graph's call, Inductor's kernels and the edited ones "
                   "interleaved in one process; each replaced kernel: the profiler's device time in its graph",
            "step": timing["step"], "kernels": kernels, "seconds": timing.get("seconds")}


def _ms(summary: dict | None) -> str:
    if not summary:
        return "not found"
    return f"{summary['median_ms']:.4f} ({summary['p20_ms']:.4f}-{summary['p80_ms']:.4f})"


def _ratio(before: dict | None, after: dict | None) -> str:
    if not before or not after or not before["median_ms"]:
        return ""
    return f"{after['median_ms'] / before['median_ms']:.3f}"


def timing_markdown(result: RunResult) -> list[str]:
    """The one table of micro win and end-to-end effect: each replaced kernel's in-graph time before and after, and
    the whole compiled step's, medians with p20-p80 in ms."""
    timing = timing_json(result)
    if not timing["measured"]:
        return [f"Timing: {timing['why']}."]
    step = timing["step"]
    before = step.get("inductor")
    graphs = len(step["graphs"])
    lines = [f"Timing: {step['repetitions']} repetitions of the step, Inductor's kernels and the edited ones "
             f"interleaved in one process; the step is every graph called once ({graphs} graph{'s' if graphs != 1 else ''}). "
             "Median (p20-p80) in ms; after/before under 1 is a win.", "",
             "| what | before: Inductor | after: edited | after/before | share of the step before | host µs per launch |",
             "|---|---|---|---|---|---|"]
    for k in timing["kernels"]:
        share = (f"{100 * k['inductor']['median_ms'] / before['median_ms']:.1f} %"
                 if k.get("inductor") and before and before["median_ms"] else "")
        host = k.get("host_us") or {}
        launch = (f"{host['inductor']:.1f} → {host['edited']:.1f}"
                  if host.get("inductor") is not None and host.get("edited") is not None else "")
        lines.append(f"| {k['graph']}/{k['kernel']} ({k['module'] or k['module_kernel']}), in its graph | "
                     f"{_ms(k.get('inductor'))} | {_ms(k.get('edited'))} | {_ratio(k.get('inductor'), k.get('edited'))} | "
                     f"{share} | {launch} |")
    replayed = step.get("as") == "cuda graph replays"
    lines.append(f"| **the whole compiled step**{' (CUDA graph replays)' if replayed else ''} | {_ms(before)} | "
                 f"{_ms(step.get('edited'))} | {_ratio(before, step.get('edited'))} | 100 % | |")
    lines.append("")
    decided = host_decides(timing)
    if decided:
        lines += [decided, ""]
    if replayed:
        counts = step.get("replay_outputs") or {}
        lines.append("The step is each side's graphs captured in one CUDA graph and replayed, as the target's own "
                     "steps run (no host time a launch); the replays' outputs: "
                     + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".")
    elif step.get("captured"):
        lines.append(f"The target ran CUDA graphs, but the step was {step['captured']}.")
    lines.append("A kernel's time is its device time alone (the profiler's), summed over its launches in one call of "
                 "its graph. The step's time includes the host's work: the last column is the median host time of one "
                 "launch, Inductor's launcher before, the edited module's launch() after (where a step is bound by "
                 "launches, that shows in the step and not in the kernel).")
    return lines


def host_decides(timing: dict) -> str:
    """A line when the host, not the kernels, made the step slower: the swapped kernels' device time went down (or
    stayed) while the step's went up by more than its spread; "" otherwise."""
    step = timing["step"]
    before, after = step.get("inductor"), step.get("edited")
    kernels = [k for k in timing["kernels"] if k.get("inductor") and k.get("edited")]
    if not before or not after or not kernels:
        return ""
    device = sum(k["edited"]["median_ms"] - k["inductor"]["median_ms"] for k in kernels)
    slower = after["median_ms"] - before["median_ms"]
    spread = max(before["p80_ms"] - before["p20_ms"], after["p80_ms"] - after["p20_ms"])
    if device > 0 or slower <= spread:
        return ""
    hosts = [k.get("host_us") or {} for k in kernels]
    launches = [(h["inductor"], h["edited"]) for h in hosts if h.get("inductor") is not None and h.get("edited") is not None]
    cost = ""
    if launches:
        cost = (f"; a launch of the edited kernels took {sum(e for _, e in launches) / len(launches):.1f} µs of host time "
                f"against {sum(i for i, _ in launches) / len(launches):.1f} µs for Inductor's")
    return (f"**The host, not the kernels, decided this step**: the edited kernels took {abs(device):.4f} ms less device "
            f"time, yet the step took {slower:.4f} ms more{cost}.")


def raise_if_differ(result: RunResult) -> None:
    if result.equal:
        return
    d = result.first_difference
    where = f"{d.graph} output {d.index} ({d.detail or 'values differ'})" if d else "no graph output differs"
    failed = f"the target failed with the edited kernels ({result.target_failed}); " if result.target_failed else ""
    raise ResultsDiffer(f"results differ: {failed}{where}; the first kernel whose outputs differ: "
                        f"{result.culprit or 'none'} (see {result.directory}/run.md)")
