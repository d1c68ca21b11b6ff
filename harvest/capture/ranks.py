"""A torchrun job's ranks as one capture: graphs every rank compiled identically once, the others per rank.

    merged = merge_ranks({0: capture_of_rank0, 1: capture_of_rank1})      # pure
    status = ranked_status([RankRun(...), ...], timed_out=False, interrupted=False)

Each rank's capture is its own (raw/rank<r>/ holds it whole, a capture harvest can replay or diff alone). Graphs are
matched across ranks by what Dynamo and AOTAutograd called them (compile id and AOT id), never by their order of
capture, which a recompile on one rank shifts. A graph is the same on two ranks when its code and every kernel's
recorded launch (arguments, storages, grid and the config that ran) are: then it is written once and lists its
ranks; otherwise each variant is written apart, named after the lowest rank that compiled it (g0_forward_rank1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from harvest.model import Capture, CapturedGraph, RecordedLaunch


@dataclass(frozen=True)
class RankRun:
    """How one rank's process ended, beside what it captured."""

    rank: int
    capture: Capture
    status: str  # as RunOutcome.status: "ok", "exit", "raised", ...; "ended" when it wrote no exit (killed)
    exit_code: int
    error: str
    ended_at: float = 0.0  # when it raised (time.time()), to tell the rank that failed first from those that followed

    @property
    def failed(self) -> bool:
        return self.status == "raised" or (self.status == "exit" and bool(self.exit_code)) or self.status not in ("ok", "exit", "ended")


def layouts(launch: RecordedLaunch) -> tuple:
    """What must match for two ranks' launches of a kernel to count as the same: not data, counts or checksums."""
    return launch.args, launch.storages, launch.config, launch.grid


DEVICE_INDEX = re.compile(r"\b(cuda:|index=|stream)\d+\b|\b(_DeviceGuard\(|set_device\(|get_raw_stream\()\d+\)")


def device_neutral(text: str) -> str:
    """Code with its GPU index left out: rank 1 compiles for cuda:1 (its stream1, DeviceProperties index=1) what
    rank 0 compiles for cuda:0, and a module runs on whichever device it is given."""
    return DEVICE_INDEX.sub(lambda m: m.group(1) + "N" if m.group(1) else m.group(2) + "N)", text)


def graph_identity(graph: CapturedGraph) -> tuple:
    """The graph's code (on any GPU index) and each kernel's recorded launch, config included (the config that ran:
    the autotuner's winners are only written when a rank finishes, so a rank ended early has none)."""
    recorded = tuple((name, layouts(launch)) for name, launch in sorted(graph.recorded.items()))
    return device_neutral(graph.source), recorded


def merge_ranks(captures: dict[int, Capture]) -> Capture:
    """One capture of every rank's graphs (see the module's docstring); the first rank's capture gives the rest."""
    ranks = tuple(sorted(captures))
    keys: list[tuple[str, str]] = []  # (compile id, AOT id) in the order the ranks first captured them
    variants: dict[tuple[str, str], list[tuple[tuple, list[tuple[int, CapturedGraph]]]]] = {}
    for rank in ranks:
        for graph in captures[rank].graphs:
            key = (graph.compile_id, graph.aot_id)
            if key not in variants:
                keys.append(key)
                variants[key] = []
            identity = graph_identity(graph)
            found = next((held for same, held in variants[key] if same == identity), None)
            if found is None:
                variants[key].append((identity, [(rank, graph)]))
            else:
                found.append((rank, graph))
    graphs = []
    for index, key in enumerate(keys):
        for _, held in variants[key]:
            first_rank, first = held[0]
            on = tuple(rank for rank, _ in held)
            graphs.append(replace(
                first, index=index, ranks=on, raw_name=f"rank{first_rank}/{first.name}",
                specific_to=None if on == ranks else first_rank,
            ))
    base = captures[ranks[0]]
    return replace(base, graphs=tuple(graphs), ranks=ranks, incomplete="")


def ranked_status(runs: list[RankRun], timed_out: bool, interrupted: bool) -> tuple[str, int, str, str, str]:
    """(status, exit code, error, which ranks it is about, what became of the others) of the whole job.

    The rank that failed first (raised or exited non-zero) is the job's failure; ranks that failed after it (a
    collective whose peer died) and ranks torchrun ended then (they wrote no exit) are said after it. Past
    --timeout, the ranks that had not finished are named."""
    ended = [run.rank for run in runs if run.status == "ended"]
    if timed_out or interrupted:
        return ("timeout" if timed_out else "interrupted"), 0, "", ranks_text(ended), ""
    failures = sorted((run for run in runs if run.failed), key=lambda run: (run.ended_at or float("inf"), run.rank))
    if failures:
        first = failures[0]
        after = [f"{ranks_text([run.rank for run in failures[1:]])} failed after it"] if failures[1:] else []
        after += [f"torchrun ended {ranks_text(ended)}, which had not finished"] if ended else []
        return first.status, first.exit_code, first.error, ranks_text([first.rank]), "; ".join(after)
    if ended:  # killed without an error of its own (the OOM killer, a signal): a crash
        return "crashed", 1, "", ranks_text(ended), ""
    return "ok", 0, "", "", ""


def ranks_text(ranks: list[int]) -> str:
    """"rank 1", "ranks 0 and 2", "ranks 0, 1 and 3" ("" for none)."""
    if not ranks:
        return ""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"
