"""What to tune first: every kernel of an extraction ranked by its share of the step.

    table = rank_kernels(manifest, capture, bench)   # pure: manifest.json, raw/capture.json, bench/bench.json dicts
    text = tune_markdown(table)                      # the table for report.md (report.html and `harvest bench` too)

The step is one call of every graph the run compiled, in the order they ran (a forward and its backward: a training
step). Two bases, never mixed in one table:

  measured   after `harvest bench` on a GPU: each graph's call() timed back to back with CUDA events, and every
             device kernel's time in it from the profiler (bench.json "graphs"/<graph>/"step"). A kernel's share is
             its device time per step over the step's time; "at the bound" is its bytes moved at the copy bandwidth
             measured in the same run (a matmul template's: its TFLOP/s at the matmul peak measured then), and
             "saved" what the step would gain there (Amdahl). The step's other
             device work (library matmuls, copies, memsets) is ranked beside them, as "extern", so the shares add up
             to the device's busy time.
  estimate   anywhere else: bytes moved per launch (the byte ranges of the storages the record saw it touch; a
             storage read and written counts twice) times the launches the run recorded. A share of traffic, not of
             time: a compute-bound kernel ranks too low.
"""

from __future__ import annotations

from dataclasses import dataclass

from harvest.text_output import clipped

IDLE_NOTE = 0.9  # below this share of the step busy, the heading says the step is launch-bound
NAME_WIDTH = 64  # a library kernel's name is cut there in the tables
EXTERN = "extern"  # a device kernel of the step that is not one of Inductor's Triton kernels (cuBLAS, a copy ...)


@dataclass(frozen=True)
class TuneRow:
    graph: str
    kernel: str  # the module's name (Inductor's where there is no module)
    inductor_name: str
    kind: str
    launches: int | None  # how many times the run launched it (recorded)
    bytes_per_launch: int | None
    share: float  # of the step's time (measured) or of its bytes moved (estimate), 0..1
    ms_per_step: float | None = None  # device time of its launches in one call of its graph
    launches_per_step: int | None = None
    gbps: float | None = None
    pct_copy: float | None = None
    tflops: float | None = None  # a matmul template's, in the step
    pct_peak: float | None = None  # of the matmul peak measured in the same run
    saved_ms: float | None = None  # the step's gain were it to run at its bound (copy bandwidth; a template: matmul peak)
    saved_share: float | None = None  # of the step


@dataclass(frozen=True)
class TuneTable:
    rows: tuple[TuneRow, ...]
    measured: bool
    step_ms: float | None = None  # one call of every graph, median of CUDA events
    busy_ms: float | None = None  # every device kernel's time in that step, Triton's and the extern calls'
    kernels_ms: float | None = None  # the Triton kernels' part of busy_ms
    copy_gbps: float | None = None
    gpu: str = ""
    left_out: tuple[tuple[str, str], ...] = ()  # (graph, why) of graphs bench could not time: not in the step


def recorded_bytes(launch: dict) -> int | None:
    """Bytes one recorded launch touched: the byte range of each storage it used, twice for one it reads and writes."""
    storages, args = launch.get("storages"), launch.get("args")
    if not isinstance(storages, list) or not isinstance(args, list):
        return None
    read = {a["tensor"]["storage"] for a in args if isinstance(a.get("tensor"), dict) and not str(a.get("param", "")).startswith("out_ptr")}
    total = 0
    for index, storage in enumerate(storages):
        span = int(storage.get("hi", 0)) - int(storage.get("lo", 0))
        total += span * ((index in read) + bool(storage.get("written")))
    return total


def _recorded(capture: dict | None) -> dict[tuple[str, str], dict]:
    found = {}
    for graph in (capture or {}).get("graphs") or []:
        for name, launch in (graph.get("recorded") or {}).items():
            if isinstance(launch, dict):
                found[(graph.get("name", ""), name)] = launch
    return found


def _bench_rows(bench: dict | None) -> dict[tuple[str, str], dict]:
    return {(row.get("graph", ""), row.get("inductor_kernel", "")): row for row in (bench or {}).get("rows") or []}


def graph_error(entry: object) -> str:
    """Why bench has no step of a graph (its entry in bench.json "graphs")."""
    if isinstance(entry, dict) and entry.get("error"):
        return str(entry["error"])
    if isinstance(entry, dict) and entry.get("skipped"):
        return str(entry["skipped"])
    return "not timed"


def rank_kernels(manifest: dict, capture: dict | None = None, bench: dict | None = None) -> TuneTable:
    """Every Triton kernel of the manifest ranked (largest share first; ties by graph order, then kernel order). With
    bench figures, the step is made of the graphs bench timed; a graph it could not time (its call() failed) is left
    out of it, with its kernels, and the table says so."""
    recorded, rows_of = _recorded(capture), _bench_rows(bench)
    steps = {name: g["step"] for name, g in ((bench or {}).get("graphs") or {}).items() if isinstance(g, dict) and isinstance(g.get("step"), dict)}
    measured = bool(steps)
    graphs = [g for g in manifest.get("graphs", []) if not measured or g["name"] in steps]
    left_out = tuple(sorted((g["name"], graph_error((bench or {}).get("graphs", {}).get(g["name"])))
                            for g in manifest.get("graphs", []) if measured and g["name"] not in steps and g.get("kernels")))
    kernels = [(g, k) for g in graphs for k in g.get("kernels", []) if k.get("kind") != "extern"]
    copy = (bench or {}).get("copy_gbps") if measured else None
    entries, bench_row_of = [], {}
    for order, (graph, kernel) in enumerate(kernels):
        launch = recorded.get((graph["name"], kernel["name"])) or {}
        bench_row = rows_of.get((graph["name"], kernel["name"])) or {}
        bench_row_of[order] = (bench_row.get("flops"), bench_row.get("peak_tflops"))
        moved = bench_row.get("bytes_moved") if measured and bench_row.get("bytes_moved") else recorded_bytes(launch)
        launches = (kernel.get("recorded") or {}).get("launches") or launch.get("launches")
        entry = dict(graph=graph["name"], kernel=kernel.get("display_name") or kernel["name"], inductor_name=kernel["name"],
                     kind=kernel.get("kind", ""), launches=launches, bytes_per_launch=moved)
        if measured:
            timed = (steps[graph["name"]].get("kernels") or {}).get(kernel["name"]) or {}
            entry.update(ms_per_step=timed.get("ms"), launches_per_step=timed.get("launches"))
        entries.append((order, entry))
    if measured:
        step_ms = sum(float(s["call"]["median_ms"]) for s in steps.values())
        busy = sum(float(s.get("busy_ms") or 0.0) for s in steps.values())
        rows = []
        for order, entry in entries:
            ms, per_step, moved = entry["ms_per_step"], entry["launches_per_step"], entry["bytes_per_launch"]
            flops, peak = bench_row_of.get(order, (None, None))
            if ms and per_step and flops:  # a matmul template: its bound is the matmul peak, not the copy bandwidth
                entry["tflops"] = flops * per_step / (ms * 1e9)
                if peak:
                    entry["pct_peak"] = 100 * entry["tflops"] / peak
                    entry["saved_ms"] = max(0.0, ms - flops * per_step / (peak * 1e9))
                    entry["saved_share"] = entry["saved_ms"] / step_ms if step_ms else None
            elif ms and per_step and moved:
                gbps = moved * per_step / (ms * 1e6)
                entry["gbps"] = gbps
                if copy:
                    entry["pct_copy"] = 100 * gbps / copy
                    entry["saved_ms"] = max(0.0, ms - moved * per_step / (copy * 1e6))
                    entry["saved_share"] = entry["saved_ms"] / step_ms if step_ms else None
            rows.append((order, TuneRow(share=(ms or 0.0) / step_ms if step_ms else 0.0, **entry)))
        kernels_ms = sum(row.ms_per_step or 0.0 for _, row in rows)
        triton = {(g["name"], k["name"]) for g, k in kernels}
        for name, step in steps.items():  # the rest of the device's work in the step: library calls, copies, memsets
            for device_kernel, timed in (step.get("kernels") or {}).items():
                if (name, device_kernel) not in triton and timed.get("ms"):
                    rows.append((len(rows), TuneRow(graph=name, kernel=device_kernel, inductor_name=device_kernel, kind=EXTERN,
                                                    launches=None, bytes_per_launch=None, share=timed["ms"] / step_ms if step_ms else 0.0,
                                                    ms_per_step=timed["ms"], launches_per_step=timed.get("launches"))))
        table = dict(measured=True, step_ms=step_ms, busy_ms=busy, kernels_ms=kernels_ms, copy_gbps=copy,
                     gpu=str(((bench or {}).get("env") or {}).get("gpu", "")), left_out=left_out)
    else:
        traffic = {order: (e["bytes_per_launch"] or 0) * (e["launches"] or 0) for order, e in entries}
        total = sum(traffic.values())
        rows = [(order, TuneRow(share=traffic[order] / total if total else 0.0, **entry)) for order, entry in entries]
        table = dict(measured=False)
    ranked = [row for _, row in sorted(rows, key=lambda item: (-item[1].share, item[0]))]
    return TuneTable(rows=tuple(ranked), **table)


def _mb(count: int | None) -> str:
    return "—" if count is None else f"{count / 1e6:.3f}" if count < 1e7 else f"{count / 1e6:.1f}"


def _figure(value: float | None, spec: str, suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def tune_heading(table: TuneTable) -> str:
    """One line saying what the shares are of."""
    if table.measured:
        covered = f"; device busy {table.busy_ms:.3f} ms ({100 * table.busy_ms / table.step_ms:.0f} % of the step), Triton kernels {table.kernels_ms:.3f} ms" if table.step_ms and table.busy_ms is not None else ""
        copy = f", copy bandwidth {table.copy_gbps:.0f} GB/s" if table.copy_gbps else ""
        missing = "".join(f" {name} is not in the step: {why}." for name, why in table.left_out)
        if table.step_ms and table.busy_ms is not None and table.busy_ms < IDLE_NOTE * table.step_ms:
            idle = 100 * (1 - table.busy_ms / table.step_ms)
            missing += (f" The device is idle for {idle:.0f} % of the step: launch overhead and host work, which no "
                        "kernel's tuning removes (fewer launches or CUDA graphs do).")
        return f"Measured by `harvest bench` on {table.gpu or 'the GPU'}: step {table.step_ms:.3f} ms (one call of each graph, CUDA events){covered}{copy}.{missing}"
    return ("An estimate (no `harvest bench` on a GPU yet): each kernel's share of the bytes the step moves (bytes per "
            "launch from the record × the launches the run recorded), not of its time.")


TUNE_COLUMNS_MEASURED = ("#", "kernel", "kind", "launches", "MB / launch", "ms / step", "share", "GB/s", "% copy", "saved at the bound")
TUNE_COLUMNS_ESTIMATE = ("#", "kernel", "kind", "launches", "MB / launch", "share of bytes (estimate)")


def tune_cells(table: TuneTable) -> tuple[tuple[str, ...], list[list[str]]]:
    """The table's columns and its rows as text cells (for markdown, HTML and the terminal alike)."""
    cells = []
    for rank, row in enumerate(table.rows, 1):
        name = clipped(row.kernel, NAME_WIDTH)
        launches = row.launches_per_step if row.kind == EXTERN else row.launches  # an extern's: in one step
        first = [str(rank), f"{row.graph}/{name}", row.kind, "—" if launches is None else str(launches), _mb(row.bytes_per_launch)]
        if table.measured:
            saved = "—" if row.saved_ms is None else f"{row.saved_ms:.3f} ms ({100 * (row.saved_share or 0):.1f} %)"
            if row.tflops is not None:  # a template: TFLOP/s and % of the matmul peak in those two columns
                rate = [f"{row.tflops:.0f} TFLOP/s", _figure(row.pct_peak, ".0f", " % of peak")]
            else:
                rate = [_figure(row.gbps, ".0f"), _figure(row.pct_copy, ".0f", " %")]
            first += [_figure(row.ms_per_step, ".4f"), f"{100 * row.share:.1f} %", *rate, saved]
        else:
            first += [f"{100 * row.share:.1f} %"]
        cells.append(first)
    return (TUNE_COLUMNS_MEASURED if table.measured else TUNE_COLUMNS_ESTIMATE), cells


def tune_markdown(table: TuneTable, top: int | None = None) -> str:
    """The "What to tune first" section of report.md ("" for an extraction with no kernels)."""
    if not table.rows:
        return ""
    columns, cells = tune_cells(table)
    shown = cells if top is None else cells[:top]
    lines = ["## What to tune first", "", tune_heading(table), "",
             "| " + " | ".join(columns) + " |", "|" + "|".join("--:" if c not in ("kernel", "kind") else "---" for c in columns) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in shown]
    if top is not None and len(cells) > top:
        lines += ["", f"{len(cells) - top} more in report.html."]
    return "\n".join(lines) + "\n"
