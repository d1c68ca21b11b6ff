"""The compact summary scripts/gpu/verify.sh bench prints: every bench.json under a directory of extractions, and the
figures issue 10's acceptance asks for (ext/graph ratio over kernels >= 20 us, square vs copy bandwidth,
repeatability, the seed's table, sweeps).

    python scripts/bench_summary.py /tmp/x        (reads /tmp/x/<name>/bench/bench.json and friends)
"""

import csv
import json
import statistics
import sys
from pathlib import Path


def load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def ms(value, low=None, high=None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" + (f" ({low:.4f}-{high:.4f})" if low is not None and high is not None else "")


def main(root: Path) -> None:
    everything = []
    for bench in sorted(root.glob("*/bench/bench.json")):
        data = load(bench)
        if not data:
            continue
        name = bench.parent.parent.name
        env = data.get("env", {})
        print(f"== {name}: copy {data.get('copy_gbps') or 0:.0f} GB/s on {env.get('gpu', '?')}, torch {env.get('torch', '?')}, triton {env.get('triton', '?')}")
        for row in data["rows"]:
            everything.append((name, row))
            pct = f"{row['extracted_pct_copy']:.0f}%" if row.get("extracted_pct_copy") else "-"
            ratio = f"{row['extracted_over_in_graph']:.3f}" if row.get("extracted_over_in_graph") else "-"
            speedup = f"{row['eager_over_extracted']:.2f}x" if row.get("eager_over_extracted") else "-"
            print(f"  {row['graph']}/{row['kernel'][:40]:40s} ext {ms(row['extracted_ms'], row['extracted_p20_ms'], row['extracted_p80_ms'])}"
                  f" graph {ms(row['in_graph_ms'])} (as it runs {ms(row.get('in_graph_as_it_runs_ms'))}) ext/graph {ratio} alone {ms(row['inductor_alone_ms'])}"
                  f" eager {ms(row['eager_ms'])} ({speedup}) {pct} first {row['extracted_first_call_ms'] or 0:.0f} ms"
                  + (f" [{row['eager_ops']}]" if row.get("eager_ops") else "")
                  + (f"\n      note: {row['note'][:300]}" if row.get("note") else ""))
    print("\n== acceptance")
    timed = [(n, r) for n, r in everything if r.get("in_graph_ms") and r["in_graph_ms"] >= 0.020 and r.get("extracted_over_in_graph")]
    other_config = [(n, r) for n, r in timed if r.get("in_graph_config_pinned") is False]
    for n, r in other_config:
        print(f"  left out: {n} {r['graph']}/{r['kernel']}: in the graph it ran another config than the recorded one "
              f"(ext/graph {r['extracted_over_in_graph']:.3f} compares two configs)")
    timed = [(n, r) for n, r in timed if r.get("in_graph_config_pinned") is not False]
    if timed:
        ratios = [r["extracted_over_in_graph"] for _, r in timed]
        print(f"ext/graph (profiler device time) over {len(timed)} kernels >= 20 us: median {statistics.median(ratios):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f}")
        for n, r in timed:
            if r["extracted_over_in_graph"] > 1.05 or r["extracted_over_in_graph"] < 0.95:
                print(f"  outside 0.95-1.05: {n} {r['graph']}/{r['kernel']} {r['extracted_over_in_graph']:.3f} "
                      f"(ext device {r['extracted_device_ms']:.4f}, graph {r['in_graph_ms']:.4f}, alone {ms(r['inductor_alone_device_ms'])})")
    else:
        print("ext/graph: no kernel >= 20 us with both figures")
    for n, r in everything:
        if n in ("square_compile", "square_square", "pytorch_square"):
            print(f"{n} {r['kernel']}: {r['extracted_pct_copy'] or 0:.1f}% of the copy bandwidth ({r['extracted_gbps'] or 0:.0f} GB/s), "
                  f"eager {ms(r['eager_ms'])} [{r.get('eager_ops') or r.get('aten_ops')}] vs extracted {ms(r['extracted_ms'])}")
    first = load(root / "square_square/bench/bench.json")
    again = load(root / "square_square/bench_again/bench.json")
    if first and again and first["rows"][0].get("extracted_ms") and again["rows"][0].get("extracted_ms"):
        a, b = first["rows"][0]["extracted_ms"], again["rows"][0]["extracted_ms"]
        print(f"repeatability, square_square benched twice: {a:.4f} vs {b:.4f} ms: {100 * abs(a - b) / a:.2f} %")
    own = load(root / "square_square/bench/module_bench.json")
    if own and first:
        kernel = own["timings"]["kernel"]
        print(f"the module's own --bench: {ms(kernel['median_ms'], kernel['p20_ms'], kernel['p80_ms'])} "
              f"({kernel.get('pct_copy') or 0:.1f}% of its copy {own['copy_gbps']:.0f} GB/s) vs harvest bench {ms(first['rows'][0]['extracted_ms'])}")
    for sweep in sorted(root.glob("*/bench/*/*.sweep.csv")):
        rows = list(csv.DictReader(sweep.open()))
        timed_rows = [r for r in rows if r["median_ms"]]
        if not timed_rows:
            continue
        choice = next((r for r in rows if r["inductor_choice"] == "True"), None)
        best = min(timed_rows, key=lambda r: float(r["median_ms"]))
        bad = [r for r in rows if r["check"] != "ok"]
        line = f"sweep {sweep.parent.parent.parent.name}/{sweep.name}: {len(rows)} configs, {len(bad)} failed the check; best {best['config']} {float(best['median_ms']):.4f} ms"
        if choice and choice["median_ms"]:
            line += f"; Inductor's {choice['config']} {float(choice['median_ms']):.4f} ms"
            if first and sweep.parent.parent.parent.name == "square_square":
                line += f" (same config in the main bench: {first['rows'][0]['extracted_ms']:.4f} ms)"
        print(line)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/x"))
