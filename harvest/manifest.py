"""manifest.json's shape: typed values in, JSON-ready dicts out.

Pure: nothing here reads or writes a file. api.py decides what each kernel became; this module only says how the
manifest spells it. The key order of every dict is the order manifest.json is written in (report.py and diff.py
read these keys back).
"""

from __future__ import annotations

from dataclasses import dataclass

from harvest.fusion import GraphFusion, KernelFusion
from harvest.model import Capture, CapturedGraph, Graph, Kernel, RecordedLaunch
from harvest.version import __version__
from harvest.writer import sha256


@dataclass(frozen=True)
class KernelOutcome:
    """What became of one kernel: its module (path and source) or why it has none."""

    kernel: Kernel
    display_name: str
    launches: int  # in the graph's call()
    module: str | None = None  # path in the extraction
    source: str | None = None
    standalone_reason: str | None = None
    reference: dict | None = None  # what the module's eager reference compares (harvest.reference.reference_json)
    launch_params: tuple[tuple[str, str | None], ...] = ()  # Inductor's launch parameter -> the module's (None: fixed)


def extraction_json(capture: Capture, names: str, graphs: list[dict]) -> dict:
    """The manifest's head and its graphs; generated_files (and not_written) are added once the files are known."""
    target = capture.target  # a replayed raw/ keeps the original target, so its output is identical
    if capture.launcher:  # a torchrun job: its own spelling, which says how it was launched
        command = ["harvest", "extract", "--", "torchrun", *capture.launcher, target, *capture.command]
    else:
        command = ["harvest", "extract", target, *(["--", *capture.command] if capture.command else [])]
    return {
        "harvest_version": __version__,
        "target": target,
        "command": command,
        "mode": capture.mode,
        "device": capture.device,
        "gpu": capture.gpu_name,
        "torch": capture.torch_version,
        "triton": capture.triton_version,
        "names": names,
        "references": reference_counts(graphs),
        "graphs": graphs,
    } | ({"ranks": list(capture.ranks)} if capture.ranks else {})


def reference_counts(graphs: list[dict]) -> dict[str, int]:
    """How many kernel modules have an eager reference for every output they write, for some, for none; and how
    many references were built from the graph recorded at capture time."""
    counts = {"full": 0, "partial": 0, "none": 0, "from_recorded_graph": 0}
    for graph in graphs:
        for kernel in graph["kernels"]:
            reference = kernel.get("reference")
            if reference:
                counts[reference["coverage"]] += 1
                counts["from_recorded_graph"] += reference["built_from"] == "recorded graph"
    return counts


def generated_files_json(files: dict[str, str]) -> dict[str, str]:
    """path -> sha256 of every generated file: how the next extraction knows a file was edited by hand."""
    return {path: sha256(text) for path, text in sorted(files.items())}


def graph_json(captured: CapturedGraph, graph: Graph, kernels: list[dict], fusion: GraphFusion) -> dict:
    """One graph's entry: its kernels (kernel_json), externs, launches, what parse left unread, and its fusion."""
    return {
        "name": graph.name,
        "role": graph.role,
        "aot_id": captured.aot_id,
        "compile_id": captured.compile_id,
        "raw": f"raw/{captured.raw_dir}/output_code.py",
        "raw_sha256": sha256(captured.source),
        **({"ranks": list(captured.ranks)} if captured.ranks else {}),
        "kernels": kernels,
        "externs": [
            {"op": e.op, "args": list(e.args), "out": e.out, "order": e.order} for e in graph.externs
        ],
        "launches": [
            {"kernel": launch.kernel, "order": launch.order, "args": [
                {"param": a.param, "expr": a.expr, "buffer": a.buffer} for a in launch.args
            ]}
            for launch in graph.launches
        ],
        "unparsed": list(graph.unparsed),
        "fusion": fusion.to_json(),
    }


def kernel_json(outcome: KernelOutcome, captured: CapturedGraph, capture: Capture, graph: str, fusion: KernelFusion) -> dict:
    """One kernel's entry in its graph."""
    kernel = outcome.kernel
    return {
        "name": kernel.name,
        "display_name": outcome.display_name,
        "kind": kernel.kind,
        "module": outcome.module,
        "sha256": sha256(outcome.source) if outcome.source is not None else None,
        "standalone_reason": outcome.standalone_reason,
        "launches": outcome.launches,
        "autotune": winner_json(captured, kernel),
        "fusion": fusion.to_json(),
        "recorded": recorded_json(captured.recorded.get(kernel.name), captured.raw_dir, capture),
        "reference": outcome.reference,
        "launch_params": [list(pair) for pair in outcome.launch_params] if outcome.source is not None else None,
    }


def recorded_json(recorded: RecordedLaunch | None, graph: str, capture: Capture) -> dict | None:
    """The manifest's summary of a kernel's recorded launch."""
    if recorded is None:
        return None
    return {
        "launches": recorded.launches,
        "distinct": recorded.distinct,
        "grid": list(recorded.grid) if recorded.grid else None,
        "data": f"raw/{graph}/records/{recorded.data}" if recorded.data else None,
        "data_bytes": sum(s.hi - s.lo for s in recorded.storages) if recorded.data else 0,
        "note": recorded.data_note,
        "device": capture.record_device,
    } | ({"checksums": list(recorded.checksums)} if recorded.checksums else {})


def winner_json(captured: CapturedGraph, kernel: Kernel) -> dict | None:
    """The config Inductor's autotuner picked in the run, if the run recorded one."""
    winner = captured.winners.get(kernel.name)
    if winner is None:
        return None
    return {"kwargs": winner.kwargs, "num_warps": winner.num_warps, "num_stages": winner.num_stages, "chosen_by": winner.chosen_by}
