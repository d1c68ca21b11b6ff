"""Targets that need no run: an output_code.py, a TORCH_COMPILE_DEBUG directory, or a TORCH_TRACE log.

Each becomes the same `Capture` a live run gives (mode "artifact"), so the rest of the pipeline does not care.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path

from harvest.capture.ranks import merge_ranks
from harvest.capture.recorded import launch_from_json, launch_to_json
from harvest.errors import ParseError
from harvest.model import AutotuneWinner, Capture, CapturedGraph

CAPTURE_JSON = "capture.json"

# An Inductor wrapper module always defines these; a user's script almost never does.
_WRAPPER_MARKERS = ("async_compile = AsyncCompile()", "from torch._inductor")
_TRACE_LINE = re.compile(r"^[VIWE]\d{4} [\d:.]+ +\d+ [^\]]+\] (\{.*\})\s*$")


def looks_like_output_code(text: str) -> bool:
    """True for an Inductor wrapper module (as opposed to a script that uses torch.compile)."""
    head = text[:4000]
    return head.startswith("# AOT ID:") or all(marker in head for marker in _WRAPPER_MARKERS)


def aot_id_of(source: str) -> str:
    first = source.split("\n", 1)[0]
    match = re.match(r"# AOT ID: \['([^']*)'\]", first)
    return match.group(1) if match else ""


def _natural_key(path: Path) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def _graph(index: int, source: str, compile_id: str = "", provenance: dict | None = None) -> CapturedGraph:
    return CapturedGraph(
        index=index, aot_id=aot_id_of(source), compile_id=compile_id, source=source, provenance=provenance or {}
    )


def _capture(target: Path, graphs: list[CapturedGraph]) -> Capture:
    device = "cuda" if any("device_str='cuda'" in g.source for g in graphs) else "cpu"
    return Capture(
        target=str(target),
        command=(),
        device=f"{device} (from an artifact; not run by harvest)",
        torch_version="unknown (artifact)",
        triton_version="unknown (artifact)",
        gpu_name="",
        graphs=tuple(graphs),
        mode="artifact",
    )


def load_output_code(path: Path) -> Capture:
    text = path.read_text(encoding="utf-8", errors="replace")
    if not looks_like_output_code(text):
        raise ParseError(f"{path} is not an Inductor output_code.py (no '# AOT ID' header or AsyncCompile); give the script that calls torch.compile instead")
    return _capture(path, [_graph(0, text)])


def load_debug_dir(path: Path) -> Capture:
    """A TORCH_COMPILE_DEBUG=1 directory: torch_compile_debug/run_*/torchinductor/<graph>/output_code.py."""
    files = sorted(path.rglob("output_code.py"), key=_natural_key)
    graphs = []
    for file in files:
        provenance = {}
        mapping = file.parent / "inductor_provenance_tracking_node_mappings.json"
        if mapping.exists():
            try:
                provenance["inductor_provenance_tracking_node_mappings"] = json.loads(mapping.read_text())
            except ValueError:
                pass
        graphs.append(_graph(len(graphs), file.read_text(encoding="utf-8", errors="replace"), provenance=provenance))
    return _capture(path, graphs)


def read_trace_log(text: str) -> list[tuple[dict, str]]:
    """Records of a TORCH_TRACE log: (metadata, payload). Payload lines follow their record, each after a tab."""
    records: list[tuple[dict, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("\t") and records:
            records[-1][1].append(line[1:])
            continue
        match = _TRACE_LINE.match(line)
        if not match:
            continue
        try:
            records.append((json.loads(match.group(1)), []))
        except ValueError:
            continue
    return [(meta, "\n".join(lines)) for meta, lines in records]


def load_trace(path: Path) -> Capture:
    """A TORCH_TRACE directory (dedicated_log_torch_trace_*.log) or one such log file."""
    files = sorted(path.glob("*.log"), key=_natural_key) if path.is_dir() else [path]
    graphs: list[CapturedGraph] = []
    cut: list[str] = []
    for file in files:
        text = file.read_text(encoding="utf-8", errors="replace")
        if text and not text.endswith("\n"):  # torch ends every record with a newline: this log was cut short
            cut.append(f"{file.name} ends mid-line (line {text.count(chr(10)) + 1})")
        for meta, payload in read_trace_log(text):
            compile_id = f"{meta.get('frame_id', '')}/{meta.get('frame_compile_id', '')}" if "frame_id" in meta else ""
            digest = meta.get("has_payload")
            if isinstance(digest, str) and hashlib.md5(payload.encode("utf-8")).hexdigest() != digest:
                cut.append(f"{file.name} has a record whose payload is cut short ({next(iter(meta), 'record')})")
                continue  # never parse half an output_code
            if "inductor_output_code" in meta and payload:
                graphs.append(_graph(len(graphs), payload + "\n", compile_id))
            artifact = meta.get("artifact")
            if isinstance(artifact, dict) and artifact.get("name", "").startswith("inductor_provenance") and graphs:
                try:
                    value = json.loads(payload)
                except ValueError:
                    continue
                last = graphs[-1]
                graphs[-1] = _graph(last.index, last.source, last.compile_id, {**last.provenance, artifact["name"]: value})
    capture = _capture(path, graphs)
    return replace(capture, incomplete=f"TORCH_TRACE log cut short: {cut[0]}; give the whole log") if cut else capture


def capture_record(capture: Capture) -> dict:
    """What raw/capture.json keeps beside the raw sources, so a replay reproduces the extraction exactly."""
    return {
        "target": capture.target,
        "command": list(capture.command),
        "mode": capture.mode,
        "device": capture.device,
        "gpu": capture.gpu_name,
        "torch": capture.torch_version,
        "triton": capture.triton_version,
        "graphs": [
            {
                "name": g.name,
                "index": g.index,
                "aot_id": g.aot_id,
                "compile_id": g.compile_id,
                "provenance": g.provenance,
                "winners": {
                    name: {"kwargs": w.kwargs, "num_warps": w.num_warps, "num_stages": w.num_stages, "chosen_by": w.chosen_by}
                    for name, w in sorted(g.winners.items())
                },
                "recorded": {name: launch_to_json(launch) for name, launch in sorted(g.recorded.items())},
                "kernel_graphs": dict(sorted(g.kernel_graphs.items())),
            } | ({"ranks": list(g.ranks), "raw": g.raw_dir} if g.ranks else {})
            for g in capture.graphs
        ],
    } | ({"ranks": list(capture.ranks), "launcher": list(capture.launcher)} if capture.ranks else {})


def load_raw_capture(raw_dir: Path) -> Capture:
    """Replay an extraction's raw/ directory (output_code.py per graph + capture.json): no run, same output."""
    try:
        record = json.loads((raw_dir / CAPTURE_JSON).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ParseError(f"{raw_dir / CAPTURE_JSON} is not valid JSON ({exc}); re-run the extraction from the script") from exc
    try:
        if isinstance(record, dict) and record.get("ranks"):  # a torchrun job: each rank's own capture, merged again
            ranks = {int(rank): load_rank_capture(raw_dir, int(rank)) for rank in record["ranks"]}
            return replace(merge_ranks(ranks), launcher=tuple(str(word) for word in record.get("launcher", ())))
        return _capture_from_record(raw_dir, record)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # edited by hand, or not harvest's: say which field
        raise ParseError(f"{raw_dir / CAPTURE_JSON} is not a capture harvest wrote ({type(exc).__name__}: {exc}); re-run the extraction from the script") from exc


def load_rank_capture(raw_dir: Path, rank: int) -> Capture:
    """raw/rank<r>/ of a torchrun job: a raw capture of its own."""
    if not (raw_dir / f"rank{rank}" / CAPTURE_JSON).is_file():
        raise ParseError(f"{raw_dir / CAPTURE_JSON} lists rank {rank}, but {raw_dir / f'rank{rank}' / CAPTURE_JSON} is missing; re-run the extraction from the script")
    return load_raw_capture(raw_dir / f"rank{rank}")


def _capture_from_record(raw_dir: Path, record: dict) -> Capture:
    graphs = []
    for entry in record["graphs"]:
        if not re.fullmatch(r"g\d+_\w+", str(entry["name"])):  # a name edited to reach outside raw/ is never followed
            raise ParseError(f"{raw_dir / CAPTURE_JSON} names a graph {entry['name']!r}, not one harvest writes (g<index>_<role>); re-run the extraction from the script")
        raw_name = str(entry.get("raw", entry["name"]))
        if not re.fullmatch(r"(rank\d+/)?g\d+_\w+", raw_name):  # the same for where a torchrun job's graph is
            raise ParseError(f"{raw_dir / CAPTURE_JSON} places a graph in {raw_name!r}, not where harvest writes one (rank<r>/g<index>_<role>); re-run the extraction from the script")
        ranks = tuple(int(rank) for rank in entry.get("ranks", ()))
        specific = re.search(r"_rank(\d+)$", str(entry["name"]))
        source_path = raw_dir / raw_name / "output_code.py"
        if not source_path.exists():
            raise ParseError(f"{source_path} is missing, but {raw_dir / CAPTURE_JSON} lists it; re-run the extraction from the script")
        graphs.append(
            CapturedGraph(
                index=entry["index"],
                aot_id=entry["aot_id"],
                compile_id=entry["compile_id"],
                source=source_path.read_text(encoding="utf-8"),
                provenance=entry["provenance"],
                winners={name: AutotuneWinner(**w) for name, w in entry["winners"].items()},
                recorded={name: launch_from_json(launch) for name, launch in entry.get("recorded", {}).items()},
                kernel_graphs={str(name): graph for name, graph in entry.get("kernel_graphs", {}).items()
                               if isinstance(graph, dict)},
                ranks=ranks, raw_name=raw_name if ranks else "", specific_to=int(specific.group(1)) if ranks and specific else None,
            )
        )
    return Capture(
        target=record["target"],
        command=tuple(record["command"]),
        device=record["device"],
        torch_version=record["torch"],
        triton_version=record["triton"],
        gpu_name=record["gpu"],
        graphs=tuple(graphs),
        mode=record["mode"],
        ranks=tuple(int(rank) for rank in record.get("ranks", ())),
        launcher=tuple(str(word) for word in record.get("launcher", ())),
    )


def raw_capture_dir(path: Path) -> Path | None:
    """The raw/ directory of an extraction (given the extraction dir or raw/ itself), if it has a capture.json."""
    for candidate in (path / "raw", path):
        if (candidate / CAPTURE_JSON).is_file():
            return candidate
    return None
