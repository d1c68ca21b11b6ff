"""What `harvest bench` writes and prints: one BenchRow per kernel, one SweepRow per swept config (dataclasses whose
field order is the CSV's column order), the CSV/JSON writers, and what the terminal shows (a rich table where it
fits, else a block per kernel).

Pure but for the writers: rows are built from the manifest's entries and the bench child's results (plain dicts).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from harvest.writer import write_file


def shown(path: Path) -> str:
    """A path as the user would type it here: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


# -- the rows --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchRow:
    """One kernel's figures; the field order is the CSV's column order. Times in ms, None when not measured."""

    graph: str
    module: str
    kernel: str
    inductor_kernel: str
    kind: str
    aten_ops: str  # the ATen ops the kernel fused (manifest)
    eager_ops: str  # the ATen ops its eager reference dispatched, seen by the profiler (--profile)
    inputs: str  # "recorded" or "made-up (seed 0)"
    config: str
    bytes_moved: int | None = None
    extracted_ms: float | None = None
    extracted_p20_ms: float | None = None
    extracted_p80_ms: float | None = None
    extracted_gbps: float | None = None
    extracted_pct_copy: float | None = None
    extracted_first_call_ms: float | None = None
    extracted_device_ms: float | None = None
    in_graph_ms: float | None = None
    in_graph_p20_ms: float | None = None
    in_graph_p80_ms: float | None = None
    in_graph_samples: int | None = None
    in_graph_as_it_runs_ms: float | None = None  # L2 flushed once per call(), not before the kernel: warmer inputs
    in_graph_config_pinned: bool | None = None
    extracted_over_in_graph: float | None = None
    inductor_alone_ms: float | None = None
    inductor_alone_p20_ms: float | None = None
    inductor_alone_p80_ms: float | None = None
    inductor_alone_device_ms: float | None = None
    eager_ms: float | None = None
    eager_p20_ms: float | None = None
    eager_p80_ms: float | None = None
    eager_over_extracted: float | None = None
    twin_ms: float | None = None
    twin_p20_ms: float | None = None
    twin_p80_ms: float | None = None
    copy_gbps: float | None = None
    reps: int | None = None
    flops: int | None = None  # a matmul template's 2*M*N*K per launch (its module's MATMUL)
    peak_tflops: float | None = None  # the matmul peak measured in the same run, at the template's dtype
    note: str = ""


@dataclass(frozen=True)
class SweepRow:
    """One config of a --sweep; the field order is the CSV's column order."""

    graph: str
    module: str
    config: str  # "BLOCK_SIZE=1024 w4 s1"
    blocks: str  # "BLOCK_SIZE=1024"
    num_warps: int
    num_stages: int
    inductor_choice: bool  # the config the run used (the module's CONFIG)
    check: str  # "ok", "MISMATCH: ...", "failed: ..."
    median_ms: float | None = None
    p20_ms: float | None = None
    p80_ms: float | None = None
    gbps: float | None = None
    pct_copy: float | None = None
    first_call_ms: float | None = None
    tflops: float | None = None  # a matmul template's: 2*M*N*K over the median


def write_csv(path: Path, rows: list) -> None:
    """Rows of one dataclass as CSV: its fields in order; floats to 6 significant digits, None as empty."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    if rows:
        writer.writerow([item.name for item in fields(rows[0])])
    for row in rows:
        writer.writerow(["" if v is None else f"{v:.6g}" if isinstance(v, float) else v for v in asdict(row).values()])
    write_file(path, text.getvalue())


def write_json(path: Path, data: dict) -> None:
    write_file(path, json.dumps(data, indent=1) + "\n")


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def build_row(graph: dict, kernel: dict, entry: dict, graph_result: dict, twin: dict | None, copy_gbps: float | None,
              config: str, reason: str = "") -> BenchRow:
    """A BenchRow from the manifest entries and the child's results for one kernel."""
    bench = entry.get("bench") or {}
    timings = bench.get("timings", {})
    own, eager = timings.get("kernel", {}), timings.get("eager", {})
    device = entry.get("extracted_device") or {}
    graph_kernel = (graph_result.get("kernels") or {}).get(kernel["name"]) or {}
    in_graph = graph_kernel.get("device") or {}
    alone, alone_device = entry.get("inductor_alone") or {}, entry.get("inductor_alone_device") or {}
    twin = twin or {}
    notes = [reason] if reason else []
    notes += [f"{step}: {text}" for step, text in sorted((entry.get("errors") or {}).items())]
    if "error" in eager:
        notes.append(f"eager: {eager['error']}")
    elif eager.get("partial"):
        notes.append(f"eager: {eager['partial']}, so its time is a lower bound")
    if graph_result.get("error"):
        notes.append(f"Inductor's graph did not run: {graph_result['error']}")
    elif graph_result.get("skipped"):
        notes.append(graph_result["skipped"])
    elif graph_kernel and not in_graph:
        notes.append("in graph: the profiler saw no launch of it")
    if graph_kernel.get("recorded_config") and graph_kernel.get("config") and not graph_kernel.get("pinned"):
        notes.append(f"in graph it ran config {graph_kernel['config']}, not the recorded one")
    if twin.get("error") or twin.get("note"):
        notes.append(f"twin: {twin.get('error') or twin['note']}")
    if own.get("method", "").count("fell behind"):
        notes.append(own["method"].split("; ", 1)[1])
    return BenchRow(
        graph=graph["name"],
        module=kernel["module"] or "",
        kernel=kernel["display_name"],
        inductor_kernel=kernel["name"],
        kind=kernel["kind"],
        aten_ops=" ".join(kernel["fusion"].get("aten_ops", [])) if kernel.get("fusion") else "",
        eager_ops=" ".join(entry.get("eager_aten") or []),
        inputs=bench.get("inputs", ""),
        config=config,
        bytes_moved=bench.get("bytes_moved"),
        extracted_ms=own.get("median_ms"),
        extracted_p20_ms=own.get("p20_ms"),
        extracted_p80_ms=own.get("p80_ms"),
        extracted_gbps=own.get("gbps"),
        extracted_pct_copy=own.get("pct_copy"),
        extracted_first_call_ms=own.get("first_call_ms"),
        extracted_device_ms=device.get("median_ms"),
        in_graph_ms=in_graph.get("median_ms"),
        in_graph_p20_ms=in_graph.get("p20_ms"),
        in_graph_p80_ms=in_graph.get("p80_ms"),
        in_graph_samples=in_graph.get("samples"),
        in_graph_as_it_runs_ms=(graph_kernel.get("device_as_it_runs") or {}).get("median_ms"),
        in_graph_config_pinned=graph_kernel.get("pinned") if graph_kernel.get("recorded_config") else None,
        extracted_over_in_graph=_ratio(device.get("median_ms"), in_graph.get("median_ms")),
        inductor_alone_ms=alone.get("median_ms"),
        inductor_alone_p20_ms=alone.get("p20_ms"),
        inductor_alone_p80_ms=alone.get("p80_ms"),
        inductor_alone_device_ms=alone_device.get("median_ms"),
        eager_ms=eager.get("median_ms"),
        eager_p20_ms=eager.get("p20_ms"),
        eager_p80_ms=eager.get("p80_ms"),
        eager_over_extracted=_ratio(eager.get("median_ms"), own.get("median_ms")),
        twin_ms=twin.get("median_ms"),
        twin_p20_ms=twin.get("p20_ms"),
        twin_p80_ms=twin.get("p80_ms"),
        copy_gbps=copy_gbps,
        reps=own.get("reps"),
        flops=bench.get("flops"),
        peak_tflops=bench.get("peak_tflops"),
        note="; ".join(notes),
    )


def sweep_rows(job: dict, entries: list[dict], copy_gbps: float | None, entry: dict) -> list[SweepRow]:
    from harvest.bench.sweep import config_label

    blocks = tuple(job.get("sweep_blocks") or ())
    moved = (entry.get("bench") or {}).get("bytes_moved")
    flops = (entry.get("bench") or {}).get("flops")
    rows = []
    for index, item in enumerate(entries):
        config, timing = item["config"], item.get("timing") or {}
        median = timing.get("median_ms")
        gbps = moved / (median * 1e6) if moved and median else None
        rows.append(SweepRow(
            graph=job["graph"], module=job["display_name"], config=config_label(config, blocks),
            blocks=" ".join(f"{b}={config[b]}" for b in blocks), num_warps=config["num_warps"], num_stages=config["num_stages"],
            inductor_choice=index == 0, check=item["check"], median_ms=median, p20_ms=timing.get("p20_ms"),
            p80_ms=timing.get("p80_ms"), gbps=gbps, pct_copy=100 * gbps / copy_gbps if gbps and copy_gbps else None,
            first_call_ms=timing.get("first_call_ms"), tflops=flops / (median * 1e9) if flops and median else None,
        ))
    return rows


# -- the terminal ----------------------------------------------------------------------------------------------------------


def _ms(value: float | None, low: float | None = None, high: float | None = None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" + (f" ({low:.4f}-{high:.4f})" if low is not None and high is not None else "")


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


BENCH_COLUMNS = ("kernel", "ATen ops", "MB", "extracted ms (p20-p80)", "GB/s (% copy)", "in graph ms", "ext/graph",
                 "Inductor alone ms", "eager ms", "eager/ext", "twin ms", "first call ms")
BLOCK_GRID = (("MB", "first call ms"), ("extracted ms (p20-p80)", "GB/s (% copy)"), ("in graph ms", "ext/graph"),
              ("eager ms", "eager/ext"), ("Inductor alone ms", "twin ms"))  # a kernel's block, two figures a line
SWEEP_COLUMNS = ("config", "check", "median ms (p20-p80)", "GB/s", "% copy")
TIMES_NOTE = ("times: median (p20-p80) over repetitions, CUDA events, L2 flushed before each; in graph: device time "
              "(profiler) of the kernel's first launch per call(), L2 flushed right before it (as it runs in the graph, "
              "without that flush: in_graph_as_it_runs_ms in the CSV); ext/graph: the extracted kernel's device time "
              "(profiler) over that; first call: compile + first launch, not in the median")


def bench_cells(row: BenchRow) -> dict[str, str]:
    """One row's cells as shown, keyed by BENCH_COLUMNS."""
    gbps = "-" if row.extracted_gbps is None else f"{row.extracted_gbps:.0f}" + (f" ({row.extracted_pct_copy:.0f}%)" if row.extracted_pct_copy else "")
    cells = (
        f"{row.graph}/{row.kernel}", row.eager_ops or row.aten_ops,
        "-" if row.bytes_moved is None else f"{row.bytes_moved / 1e6:.1f}",
        _ms(row.extracted_ms, row.extracted_p20_ms, row.extracted_p80_ms), gbps,
        _ms(row.in_graph_ms, row.in_graph_p20_ms, row.in_graph_p80_ms), _x(row.extracted_over_in_graph),
        _ms(row.inductor_alone_ms), _ms(row.eager_ms, row.eager_p20_ms, row.eager_p80_ms), _x(row.eager_over_extracted),
        _ms(row.twin_ms), "-" if row.extracted_first_call_ms is None else f"{row.extracted_first_call_ms:.0f}",
    )
    return dict(zip(BENCH_COLUMNS, cells))


def bench_blocks(rows: list[BenchRow]) -> str:
    """The table's figures as one block per kernel, for a pipe or a terminal narrower than the table: the kernel and
    its ATen ops, then its figures two a line under the table's column names. Nothing is folded or cut."""
    from harvest.text_output import plain_table

    blocks = []
    for row in rows:
        cells = bench_cells(row)
        grid = plain_table([[left, cells[left], right, cells[right]] for left, right in BLOCK_GRID])
        ops = f": {cells['ATen ops']}" if cells["ATen ops"] else ""
        blocks.append(f"{cells['kernel']}{ops}\n" + "\n".join("  " + line for line in grid.splitlines()))
    return "\n\n".join(blocks)


def print_result(console, result) -> None:
    """The table of the rows (a rich table where the terminal is wide enough, else a block per kernel), the sweeps'
    tables, the profiler tables, where the files are."""
    from rich.table import Table

    from harvest.text_output import fits, print_table

    if result.rows:
        gpu = result.env.get("gpu", "GPU")
        copy = f"{result.copy_gbps:.0f} GB/s" if result.copy_gbps else "not measured"
        title = f"harvest bench on {gpu}: device copy bandwidth {copy} (measured in this run)"
        table = Table(title=title, title_justify="left")
        for column in BENCH_COLUMNS:
            table.add_column(column, justify="left" if column in ("kernel", "ATen ops") else "right")
        for row in result.rows:
            table.add_row(*bench_cells(row).values())
        if fits(console, table):
            console.print(table)
        else:
            console.print(f"{title}\n\n{bench_blocks(result.rows)}\n", markup=False, highlight=False, soft_wrap=True)
        console.print(TIMES_NOTE, highlight=False, soft_wrap=True)
        for row in result.rows:
            if row.note:
                console.print(f"[yellow]{row.graph}/{row.kernel}[/]: {row.note}", highlight=False)
    if result.tune is not None:
        from harvest.tune_first import tune_cells, tune_heading

        columns, cells = tune_cells(result.tune)
        console.print(tune_heading(result.tune).replace("`", ""), highlight=False, soft_wrap=True)
        print_table(console, "What to tune first", columns, cells, right={c for c in columns if c not in ("kernel", "kind")})
    for label, rows in result.sweeps.items():
        cells = [[row.config + ("  <- Inductor's choice" if row.inductor_choice else ""), row.check[:60],
                  _ms(row.median_ms, row.p20_ms, row.p80_ms), "-" if row.gbps is None else f"{row.gbps:.0f}",
                  "-" if row.pct_copy is None else f"{row.pct_copy:.0f}%"] for row in rows]
        columns = SWEEP_COLUMNS
        if any(row.tflops for row in rows):  # a matmul template: its throughput is the figure that matters
            columns = (*SWEEP_COLUMNS, "TFLOP/s")
            cells = [c + ["-" if row.tflops is None else f"{row.tflops:.1f}"] for c, row in zip(cells, rows)]
        print_table(console, f"sweep of {label}", columns, cells)
    for label, eager_table, extracted_table in result.tables:
        console.print(f"[bold]{label}: eager reference[/] (profiler, sorted by device time)")
        console.print(eager_table, highlight=False, markup=False)
        console.print(f"[bold]{label}: extracted kernel[/]")
        console.print(extracted_table, highlight=False, markup=False)
    for path in result.files:
        console.print(f"wrote {shown(path)}")
