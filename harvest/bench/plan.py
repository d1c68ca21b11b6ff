"""What `harvest bench PATH` times, decided in harvest's own process without running anything: the kernels PATH
selects (a Selection of manifest entries), whether each graph's Inductor module may run, and the plan the bench
child follows (JSON: its graphs and its kernel jobs, with the configs a sweep tries).
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

from harvest.errors import ParseError, UsageError
from harvest.report import read_manifest
from harvest.trust import NOT_MADE_HERE, made_here


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
    from harvest.bench.sweep import SweepError, sweep_configs, sweep_space
    from harvest.module.file import ModuleFileError, read_module_file
    from harvest.parse import parse_output_code

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
