"""Every graph of a capture, planned and its kernels rendered: `plan_graph` -> `render_all` -> `finish_graph`.

plan_graph parses a captured graph, computes its fusion once and makes one RenderJob per kernel that gets a module
(the others keep a reason). render_all renders the jobs, in worker processes when the machine has cores to spare;
each job carries all it needs, so nothing reaches the workers through a global. finish_graph puts a graph's renders
back into its manifest entry and files.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from harvest.errors import ParseError
from harvest.fusion import GraphFusion, KernelFusion, graph_fusion
from harvest.manifest import KernelOutcome, graph_json, kernel_json
from harvest.model import AutotuneWinner, Capture, CapturedGraph, Graph, Kernel, Launch, RecordedLaunch
from harvest.module.arguments import runtime_params
from harvest.module.plan import ModuleContext, ModulePlan, RenderError, plan_module
from harvest.module.render import render
from harvest.parse import parse_output_code
from harvest.progress import counter
from harvest.reference import build_reference, reference_json
from harvest.rename import kernel_code, kernel_names

Progress = Callable[[str], None]
RENDERING = "rendering kernel modules"


@dataclass(frozen=True)
class RenderJob:
    """One kernel to render, with what the run recorded for it in its graph."""

    graph: Graph
    kernel: Kernel
    launch: Launch  # its first launch in the graph's call()
    display_name: str
    module_path: str  # relative to the extraction: <graph>/<display name>.py
    fusion: KernelFusion
    winner: AutotuneWinner | None = None
    recorded: RecordedLaunch | None = None
    kernel_graph: dict | None = None  # the FX graph the capture child recorded for it (reference/recorded.py)
    raw_dir: str = ""  # where its graph's raw capture and records are, under raw/ ("" : the graph's name)


@dataclass(frozen=True)
class Rendered:
    """A job's module source, its reference's summary for the manifest and its launch parameters; or why not."""

    source: str | None
    reference: dict | None = None
    launch_params: tuple[tuple[str, str | None], ...] = ()
    reason: str | None = None  # why there is no module (source is None)


@dataclass(frozen=True)
class GraphPlan:
    """One graph, parsed, with its fusion and its kernels sorted into render jobs and kernels with a reason."""

    captured: CapturedGraph
    graph: Graph
    fusion: GraphFusion
    kernel_fusions: dict[str, KernelFusion]
    planned: tuple[KernelOutcome, ...]
    jobs: tuple[RenderJob, ...]  # one per planned kernel without a reason, in order


@dataclass(frozen=True)
class GraphResult:
    """One graph's share of an extraction: its manifest entry, its modules {path: source}, the kernels left out."""

    entry: dict
    files: dict[str, str]
    skipped: tuple[tuple[str, str], ...]  # (kernel, reason), in the graph's kernel order


def plan_graph(captured: CapturedGraph, capture: Capture, names: str) -> GraphPlan:
    """Parse one captured graph, compute its fusion once, and say which kernels get a module."""
    try:
        graph = parse_output_code(captured.source, name=captured.name, role=captured.role)
    except ParseError as exc:
        raise ParseError(f"{capture.target}, graph {captured.name}: {exc}") from exc
    readable = kernel_names(graph) if names == "readable" else {k.name: k.name for k in graph.kernels}
    fusion = graph_fusion(graph, captured.provenance)
    kernel_fusions = {kf.kernel: kf for kf in fusion.kernel_fusions}  # computed once, for the graph and each kernel
    planned: list[KernelOutcome] = []
    jobs: list[RenderJob] = []
    for kernel in graph.kernels:
        launches = graph.launches_of(kernel.name)
        display_name = readable.get(kernel.name, kernel.name)
        reason = kernel.standalone_reason
        if reason is None and not launches:
            reason = "never launched in call(): no shapes to build inputs from"
        planned.append(KernelOutcome(kernel, display_name, len(launches), standalone_reason=reason))
        if reason is None:
            jobs.append(RenderJob(
                graph, kernel, launches[0], display_name, f"{graph.name}/{display_name}.py", kernel_fusions[kernel.name],
                winner=captured.winners.get(kernel.name), recorded=captured.recorded.get(kernel.name),
                kernel_graph=captured.kernel_graphs.get(kernel.name), raw_dir=captured.raw_dir,
            ))
    return GraphPlan(captured, graph, fusion, kernel_fusions, tuple(planned), tuple(jobs))


def finish_graph(plan: GraphPlan, capture: Capture, rendered: list[Rendered], on_progress: Progress) -> GraphResult:
    """A graph's manifest entry, module files and skipped kernels, from its plan and its jobs' renders (in order)."""
    made_by_job = iter(zip(plan.jobs, rendered))
    outcomes = []
    for outcome in plan.planned:
        if outcome.standalone_reason is None:
            job, done = next(made_by_job)
            outcome = (replace(outcome, module=job.module_path, source=done.source, reference=done.reference,
                               launch_params=done.launch_params)
                       if done.source is not None else replace(outcome, standalone_reason=done.reason))
        outcomes.append(outcome)
    made = [outcome for outcome in outcomes if outcome.source is not None]
    graph, captured = plan.graph, plan.captured
    on_progress(f"{graph.name}: {len(graph.kernels)} Triton kernels, {len(made)} standalone modules, {len(graph.externs)} extern calls")
    kernels = [kernel_json(o, captured, capture, graph.name, plan.kernel_fusions[o.kernel.name]) for o in outcomes]
    return GraphResult(
        entry=graph_json(captured, graph, kernels, plan.fusion),
        files={o.module: o.source for o in made},  # type: ignore[misc]
        skipped=tuple((o.kernel.name, o.standalone_reason) for o in outcomes if o.standalone_reason is not None),
    )


def render_all(capture: Capture, names: str, jobs: list[RenderJob], on_progress: Progress = lambda message: None) -> list[Rendered]:
    """Render kernel modules, of one graph or of all, in job order.

    Renaming with libcst is the slow part of an extraction, and kernels are independent: on a machine with several
    cores they render in forked worker processes, one pool for every graph of the extraction (most graphs hold only
    a few kernels). The parent imports torch first (the reference needs it; never CUDA: nothing here touches a
    device), so forking is cheap and safe. The result is the same, byte for byte, as rendering one after the other.
    """
    render_one = partial(render_job, replace(capture, graphs=()), names)  # a job carries its graph: the rest is small
    workers = min(len(jobs), os.cpu_count() or 1, 8)
    count = counter(on_progress)
    count(RENDERING, 0, len(jobs))
    done: list[Rendered] = []
    if workers < 2 or len(jobs) < 4 or "fork" not in multiprocessing.get_all_start_methods():
        for job in jobs:
            done.append(render_one(job))
            count(RENDERING, len(done), len(jobs))
        return done
    # The reference resolves ATen ops through torch: import it once here, not once in every worker.
    import torch  # noqa: F401

    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for rendered in pool.map(render_one, jobs):
            done.append(rendered)
            count(RENDERING, len(done), len(jobs))
    return done


def render_job(capture: Capture, names: str, job: RenderJob) -> Rendered:
    """One job's render; a kernel that cannot be rendered gets its reason instead of failing the extraction."""
    try:
        return Rendered(*build_module(capture, job, names))
    except (RenderError, SyntaxError) as exc:
        return Rendered(None, reason=f"could not render: {exc}")
    except Exception as exc:  # a bug on one odd kernel must not cost the user every other kernel
        return Rendered(None, reason=f"internal error while rendering ({type(exc).__name__}: {exc}); please report it")


def build_module(capture: Capture, job: RenderJob, names: str) -> tuple[str, dict, tuple[tuple[str, str | None], ...]]:
    """Rename (or not), build the reference, plan the module, render it: one kernel's standalone module source, its
    reference's summary for the manifest, and how Inductor's launch arguments map to the module's (`harvest run`)."""
    kernel = job.kernel
    code = kernel_code(kernel, job.launch, job.graph, job.display_name, names)
    reference = build_reference(kernel, job.launch, job.graph, dict(code.params), job.kernel_graph)
    context = ModuleContext(
        capture=capture, graph=job.graph, kernel=kernel, launch=job.launch, code=code, reference=reference,
        fusion=job.fusion, module_path=job.module_path, winner=job.winner, recorded=job.recorded,
        raw_dir=job.raw_dir or job.graph.name,
    )
    plan = plan_module(context)
    return render(plan), reference_json(reference, dict(code.params)), launch_params(kernel, plan)


def launch_params(kernel: Kernel, plan: ModulePlan) -> tuple[tuple[str, str | None], ...]:
    """Each positional parameter of Inductor's launch, in its order, and the module's launch() parameter it is (None:
    a size the module's kernel fixes in its body)."""
    mine = {a.inductor_param: a.param for a in plan.arguments}
    return tuple((p, mine.get(p)) for p in runtime_params(kernel))
