"""How many of a set of real models' kernels harvest extracts into modules whose --check passes.

    python scripts/model_matrix.py [TARGET ...] [--out DIR] [--jobs N] [--timeout S] [--device cpu|cuda|auto]
    PYTHONPATH=. python scripts/model_matrix.py --device cuda          (on a GPU machine, from the repo root)
    python scripts/model_matrix.py --zoo --out /tmp/zoo/run --jobs 2 --doc docs/zoo.md      (the model zoo, its table)

Per target (default: every examples/models/*.py):
  1. `python TARGET` once, fresh Inductor/Triton caches, same device (the plain run time);
  2. `python -m harvest extract TARGET -o OUT/<stem> --device D` (wall time; size of OUT/<stem>/raw);
  3. every kernel of OUT/<stem>/manifest.json: `python MODULE --check` in OUT/<stem> (TRITON_INTERPRET=1 on the CPU
     path), in parallel (--jobs), each stopped after --timeout seconds; outputs in OUT/logs/<stem>/.
Each kernel ends as: pass, fail (--check found mismatches), not standalone (harvest wrote no module; its reason),
timeout, or crash (the module raised). Prints a table per model and a total, writes OUT/matrix.json and
OUT/matrix.md (sorted, no timestamps). Exit code 0 when the matrix ran, whatever the counts; non-zero only when this
script itself broke.

--zoo: every examples/zoo/*.py (models from torchvision, transformers, timm and diffusers none of us wrote; see
docs/zoo.md), with the plain run skipped (--plain to keep it) and modules whose recorded grid has more than
--shrink-above programs checked with `--check --shrink N` (N = --shrink). Per kernel it also keeps the manifest's eager
reference coverage (full / partial / none; a kernel with no module counts as none) with the reason of every output
the reference does not compute, and flags a FAIL whose record matched bit for bit: a reference bug (false FAIL).
--doc FILE writes the zoo's table, totals and reasons into FILE between the markers ZOO_BEGIN/ZOO_END (the rest of
the file is left as it is). Each model's result is saved as OUT/models/<stem>.json when it is done; --resume takes
those of unchanged targets that extracted instead of running them again (a long run that was stopped goes on).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "examples" / "zoo"
ZOO_BEGIN = "<!-- ZOO_BEGIN: written by scripts/model_matrix.py --zoo --doc; do not edit by hand -->"
ZOO_END = "<!-- ZOO_END -->"
STATUSES = ("pass", "fail", "not standalone", "timeout", "crash")
TAIL_LINES = 12
# Lines of a failed --check that say what went wrong (the module template's wording, older and newer).
DIFFER = re.compile(r"^\s*[\w.]+: (?:(recorded|reference): )?\d+ of \d+ values differ")
SHAPE = re.compile(r"^\s*[\w.]+: (?:(recorded|reference): )?shape \(")
NOT_CHECKED = re.compile(r"^\s*([\w.]+): not checked \((.*)\)\s*$")  # older template: no reference for it
NOT_COMPARED = re.compile(r"^\s*([\w.]+): NOT COMPARED")  # newer template: no record and no reference
NOT_COMPUTED = re.compile(r"^\s*([\w.]+): reference: not computed \((.*)\)\s*$")
RECORDED_BITWISE = re.compile(r"^\s*[\w.]+: recorded(?: \(as [\w.]+, the same memory\))?: ok \(.*bit for bit\)", re.M)
SHRINK_RAN = re.compile(r"^--shrink: ran (\d+) of the grid's (\d+) programs", re.M)
MISMATCH = re.compile("|".join(p.pattern for p in (DIFFER, SHAPE, NOT_CHECKED, NOT_COMPARED)))
EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)|[\w.]*\.\w+Error)\b.*")


def child_env(device: str, cache_dir: str | None = None, interpret: bool = False) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # the plain run, like the extraction, stays on the CPU
    if cache_dir is not None:
        env.update(TORCHINDUCTOR_CACHE_DIR=f"{cache_dir}/inductor", TRITON_CACHE_DIR=f"{cache_dir}/triton")
    return env


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def last_lines(text: str, count: int = TAIL_LINES) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    return lines[-count:]


def timed_run(command: list[str], env: dict, cwd: Path, timeout: float | None, log: Path | None = None):
    """(returncode or None on timeout, seconds, combined output)."""
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=timeout)
        rc, output = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as expired:
        out = expired.output or ""
        rc, output = None, out.decode(errors="replace") if isinstance(out, bytes) else out
    seconds = time.perf_counter() - started
    if log is not None:
        log.write_text(output, encoding="utf-8")
    return rc, seconds, output


def problems(lines: list[str]) -> list[str]:
    """What a --check that exited 1 found wrong, one phrase per distinct problem."""
    found, not_computed = [], {}
    for line in lines:
        if m := NOT_COMPUTED.match(line):
            not_computed[m.group(1)] = m.group(2)
        elif m := DIFFER.match(line):
            found.append(f"values differ vs {m.group(1) or 'reference'}")
        elif m := SHAPE.match(line):
            found.append(f"shape differs vs {m.group(1) or 'reference'}")
        elif m := NOT_CHECKED.match(line):
            found.append(f"output unchecked (no reference: {m.group(2)})")
        elif m := NOT_COMPARED.match(line):
            cause = not_computed.get(m.group(1))
            found.append("output unchecked (no record; no reference" + (f": {cause})" if cause else ")"))
    return list(dict.fromkeys(found))


def classify(rc: int | None, output: str) -> tuple[str, list[str]]:
    """(status, reasons) of one `MODULE --check` run: pass, fail (it ran and found a mismatch, or an output it could
    not compare), crash (an exception or a signal), timeout. Reasons: one phrase per distinct problem."""
    if rc is None:
        return "timeout", ["timed out"]
    if rc == 0:
        return "pass", []
    lines = last_lines(output, 10_000)
    if rc < 0:
        return "crash", [f"killed by signal {-rc}"]
    if any(line.startswith("Traceback") for line in lines):
        exceptions = [line.strip() for line in lines if EXCEPTION.match(line.strip())]
        return "crash", [exceptions[-1] if exceptions else lines[-1].strip()]
    found = problems(lines)
    if found:
        return "fail", found
    if rc == 1 and lines and lines[-1].rstrip().endswith(":") and " on " in lines[-1]:
        return "fail", ["nothing compared (the reference computes no output)"]
    return "fail", [f"exit code {rc}: {lines[-1].strip() if lines else 'no output'}"]


def group_key(status: str, reason: str, *kernel_names: str) -> str:
    """Reasons that differ only in the kernel's own name, in numbers or in FX node/buffer numbering group together."""
    for name in sorted(kernel_names, key=len, reverse=True):
        reason = re.sub(rf"\b{re.escape(name)}", "<kernel>", reason)
    reason = re.sub(r"(?<=[A-Za-z_])\d+\b", "N", reason)  # getitem_1, buf11, mul_19, in_ptr0
    reason = re.sub(r"\b(in_out_ptr|in_ptr|out_ptr)N\b", "<param>", reason)
    return f"{status}: " + re.sub(r"\b\d+(\.\d+)?\b", "N", reason)


def check_module(python: str, extraction: Path, module: str, device: str, timeout: float, logs: Path,
                 shrink: int | None = None):
    command = [python, module, "--check"] + (["--device", "cpu"] if device == "cpu" else [])
    if shrink:
        command += ["--shrink", str(shrink)]
    log = logs / (module.replace("/", "__") + ".log")
    rc, seconds, output = timed_run(command, child_env(device, interpret=device == "cpu"), extraction, timeout, log)
    status, reasons = classify(rc, output)
    detail = next((line.strip() for line in output.splitlines() if DIFFER.match(line)), "") if status == "fail" else ""
    # how many outputs each oracle compared and found equal (`  out_ptr: recorded: ok (...)`)
    compared = {oracle: len(re.findall(rf"^\s+[\w.]+: {oracle}(?: \(as [\w.]+, the same memory\))?: ok \(", output, flags=re.M))
                for oracle in ("recorded", "reference")}
    lines = output.splitlines()
    facts = {
        # what the module itself says its reference does not compute (the manifest's reason, as the check prints it)
        "not_computed": {m.group(1): m.group(2) for line in lines if (m := NOT_COMPUTED.match(line))},
        # a FAIL where only the reference disagrees and the record matched bit for bit: the reference is wrong
        "false_fail": status == "fail" and any(DIFFER.match(line) and m.group(1) == "reference"
                                               for line in lines if (m := DIFFER.match(line)))
                      and not any((m := DIFFER.match(line)) and m.group(1) == "recorded" for line in lines)
                      and bool(RECORDED_BITWISE.search(output)),
        "shrink_ran": (lambda m: f"{m.group(1)} of {m.group(2)}" if m else None)(SHRINK_RAN.search(output)),
    }
    return status, reasons, detail, ([] if status == "pass" else last_lines(output)), round(seconds, 2), compared, facts


def directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def grid_programs(kernel: dict) -> int | None:
    """How many programs the kernel's recorded launch ran (the product of its grid), None when unknown."""
    grid = (kernel.get("recorded") or {}).get("grid")
    try:
        return math.prod(int(g) for g in grid) if grid else None
    except (TypeError, ValueError):
        return None


def target_digest(target: Path) -> str:
    return hashlib.sha256(target.read_bytes()).hexdigest()


def run_model(target: Path, options, device: str, pool) -> dict:
    stem = target.stem
    extraction = options.out / stem
    logs = options.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    shown = display_path(target)
    result: dict = {"model": stem, "target": shown, "target_sha256": target_digest(target)}
    source = harvest_source(device)  # per model: a long run may see the checkout change under it
    result["harvest"] = source.get("commit", "?") + (" + uncommitted changes" if source.get("uncommitted") else "")

    if options.no_plain:
        result["plain_rc"], result["plain_s"] = 0, 0.0
    else:
        print(f"[{stem}] plain run: python {shown}", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as cache:
            rc, seconds, output = timed_run([python, shown], child_env(device, cache), ROOT,
                                            options.extract_timeout or None, logs / f"{stem}.plain.log")
        result["plain_rc"], result["plain_s"] = rc, round(seconds, 2)
        if rc != 0:
            result["plain_error"] = last_lines(output, 3)

    print(f"[{stem}] harvest extract -> {display_path(extraction)}", file=sys.stderr, flush=True)
    if extraction.exists():
        shutil.rmtree(extraction)
    command = [python, "-m", "harvest", "extract", shown, "-o", str(extraction), "--device", options.device]
    if options.extract_timeout:
        command += ["--timeout", str(options.extract_timeout)]
    with tempfile.TemporaryDirectory() as cache:
        rc, seconds, output = timed_run(command, child_env(device, cache), ROOT,
                                        options.extract_timeout + 120 if options.extract_timeout else None,
                                        logs / f"{stem}.extract.log")
    result["extract_rc"], result["extract_s"] = rc, round(seconds, 2)
    result["ratio"] = round(seconds / result["plain_s"], 2) if result["plain_s"] and result["plain_rc"] == 0 else None
    result["raw_bytes"] = directory_bytes(extraction / "raw")
    manifest_path = extraction / "manifest.json"
    if rc != 0 or not manifest_path.exists():
        result["extract_error"] = last_lines(output, 5)
        result["graphs"], result["kernels"] = 0, []
        result["counts"] = count([])
        last = result["extract_error"][-1] if result["extract_error"] else "no output"
        print(f"[{stem}] extract failed (exit {rc}): {last}", file=sys.stderr, flush=True)
        return result

    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    kernels, futures = [], {}
    check_logs = logs / stem
    if check_logs.exists():
        shutil.rmtree(check_logs)
    check_logs.mkdir(parents=True)
    for graph in manifest["graphs"]:
        for kernel in graph["kernels"]:
            row = {"graph": graph["name"], "kernel": kernel.get("display_name") or kernel["name"],
                   "inductor_name": kernel["name"], "module": kernel.get("module"),
                   "reference": (kernel.get("reference") or {}).get("coverage", "none"),
                   "unreferenced": {o: why for o, why in ((kernel.get("reference") or {}).get("outputs") or {}).items()
                                    if why != "compared" and not why.startswith("scratch: ")},
                   "programs": grid_programs(kernel), "shrink": None}
            if row["module"] is None:
                row.update(status="not standalone", reasons=[kernel.get("standalone_reason") or "(no reason given)"],
                           detail="", tail=[], check_s=None)
            else:
                if options.shrink_above and row["programs"] and row["programs"] > options.shrink_above:
                    row["shrink"] = options.shrink
                futures[len(kernels)] = pool.submit(check_module, python, extraction, row["module"], device,
                                                    options.timeout, check_logs, row["shrink"])
            kernels.append(row)
    print(f"[{stem}] {len(kernels)} kernels in {len(manifest['graphs'])} graphs, checking {len(futures)} modules",
          file=sys.stderr, flush=True)
    for index, future in futures.items():
        status, reasons, detail, tail, seconds, compared, facts = future.result()
        kernels[index].update(status=status, reasons=reasons, detail=detail, tail=tail, check_s=seconds, compared=compared,
                              **facts)
        if status != "pass":
            more = f" ({detail})" if detail else ""
            print(f"[{stem}]   {kernels[index]['module']}: {status}: {'; '.join(reasons)}{more}", file=sys.stderr,
                  flush=True)
    result["graphs"] = len(manifest["graphs"])
    result["extraction"] = str(extraction)
    result["kernels"] = kernels
    result["counts"] = count(kernels)
    return result


def count(kernels: list[dict]) -> dict:
    statuses = Counter(k["status"] for k in kernels)
    total = len(kernels)
    standalone = total - statuses["not standalone"]
    references = Counter(k.get("reference", "none") for k in kernels if k.get("module"))
    return {"kernels": total, "standalone": standalone, "passing": statuses["pass"],
            "percent": round(100 * statuses["pass"] / total, 1) if total else 0.0,
            **{status: statuses[status] for status in STATUSES},
            "reference_full": references["full"], "reference_partial": references["partial"],
            "reference_none": total - references["full"] - references["partial"],
            "false_fail": sum(bool(k.get("false_fail")) for k in kernels),
            "shrunk": sum(bool(k.get("shrink")) for k in kernels),
            "check_s": round(sum(k.get("check_s") or 0 for k in kernels), 2),
            "outputs_recorded": sum((k.get("compared") or {}).get("recorded", 0) for k in kernels),
            "outputs_reference": sum((k.get("compared") or {}).get("reference", 0) for k in kernels)}


def failure_groups(kernels: list[dict]) -> list[dict]:
    """Non-passing kernels grouped by status and reason: [{group, count, example}], biggest first. A kernel with
    several distinct problems counts once under each."""
    groups: dict[str, list[dict]] = {}
    for k in kernels:
        if k["status"] != "pass":
            for key in dict.fromkeys(group_key(k["status"], reason, k["kernel"], k["inductor_name"].split("/")[-1]) for reason in k["reasons"]):
                groups.setdefault(key, []).append(k)
    return [{"group": key, "count": len(members), "example": members[0]["module"] or members[0]["inductor_name"]}
            for key, members in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))]


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def seconds(value) -> str:
    return "-" if value is None else f"{value:.1f} s"


def summary_table(models: list[dict], total: dict) -> list[str]:
    lines = ["| model | graphs | kernels | standalone | passing | % | fail | crash | timeout | full reference | "
             "outputs: record / reference | harvest extract | plain run | ratio | raw/ |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        c = m["counts"]
        extract = seconds(m["extract_s"]) + ("" if m["extract_rc"] == 0 else f" (exit {m['extract_rc']})")
        plain = seconds(m["plain_s"]) + ("" if m["plain_rc"] == 0 else f" (exit {m['plain_rc']})")
        ratio = "-" if m["ratio"] is None else f"{m['ratio']:.2f}x"
        lines.append(f"| {m['model']} | {m['graphs']} | {c['kernels']} | {c['standalone']} | {c['passing']} | "
                     f"{c['percent']:.1f} | {c['fail']} | {c['crash']} | {c['timeout']} | "
                     f"{c.get('reference_full', 0)} / {c['standalone']} | {c.get('outputs_recorded', 0)} / "
                     f"{c.get('outputs_reference', 0)} | {extract} | {plain} | {ratio} | {human_bytes(m['raw_bytes'])} |")
    c = total
    lines.append(f"| **total** | {c['graphs']} | {c['kernels']} | {c['standalone']} | {c['passing']} | "
                 f"{c['percent']:.1f} | {c['fail']} | {c['crash']} | {c['timeout']} | "
                 f"{c.get('reference_full', 0)} / {c['standalone']} | {c.get('outputs_recorded', 0)} / "
                 f"{c.get('outputs_reference', 0)} | {seconds(c['extract_s'])} | {seconds(c['plain_s'])} | - | "
                 f"{human_bytes(c['raw_bytes'])} |")
    return lines


def markdown(matrix: dict) -> str:
    source = matrix["harvest_source"]
    out = [f"# harvest model matrix ({matrix['device']})", "",
           f"torch {matrix['torch']}, triton {matrix['triton']}, python {matrix['python']}; "
           f"`--check` per module, timeout {matrix['timeout_s']} s.", "",
           f"harvest from {source['path']}, commit {source.get('commit', '?')}"
           + (f", uncommitted changes in {', '.join(source['uncommitted'])}" if source.get("uncommitted") else "")
           + ".", ""]
    out += summary_table(matrix["models"], matrix["total"])
    out += ["", "## Failure reasons over all models", "",
            "A kernel with several distinct problems counts once under each; numbers and FX node numbering are "
            "replaced by N to group.", ""]
    out += [f"- x{g['count']} {g['group']} (e.g. `{g['example']}`)" for g in matrix["failure_groups"]]
    out += ["", "## Failure reasons per model", ""]
    for m in matrix["models"]:
        out.append(f"### {m['model']}")
        out.append("")
        if m.get("extract_error"):
            out.append(f"- extract failed (exit {m['extract_rc']}): `{m['extract_error'][-1] if m['extract_error'] else ''}`")
        if m.get("plain_error"):
            out.append(f"- plain run failed (exit {m['plain_rc']}): `{m['plain_error'][-1] if m['plain_error'] else ''}`")
        groups = m["failure_groups"]
        if not groups and not m.get("extract_error"):
            out.append("- all kernels pass")
        for g in groups:
            out.append(f"- x{g['count']} {g['group']} (e.g. `{g['example']}`)")
        for k in m["kernels"]:
            for output, why in (k.get("unreferenced") or {}).items():
                out.append(f"- no reference for {k['module']}: {output}: {why}")
        failing = [k for k in m["kernels"] if k["status"] != "pass"]
        if failing:
            out += ["", "| graph | kernel | module | status | reason |", "|---|---|---|---|---|"]
            for k in failing:
                reason = ("; ".join(k["reasons"]) + (f" ({k['detail']})" if k["detail"] else "")).replace("|", "\\|")
                out.append(f"| {k['graph']} | {k['kernel']} | {k['module'] or '-'} | {k['status']} | {reason} |")
        out.append("")
    return "\n".join(out)


def reason_class(why: str) -> str:
    """One line per kind of reason a kernel output has no eager reference: buffer, node and parameter numbering as
    N, and the list of FX nodes an intermediate buffer came from left out (each kernel lists its own)."""
    why = re.sub(r"\(Inductor's own intermediate, from [^)]*\)", "(Inductor's own intermediate)", why)
    why = re.sub(r", from [\w., ]+$", "", why)  # `bufN is updated in place by bufM, from <its FX nodes>`
    why = re.sub(r"\[[^\]]*\]", "[...]", why)  # shapes, symbolic ones included
    why = re.sub(r"^\w+ has shape \[", "<node> has shape [", why)
    why = re.sub(r"(?<=[A-Za-z_])\d+\b", "N", why)
    why = re.sub(r"\b(in_out_ptr|in_ptr|out_ptr)N\b", "<param>", why)
    return re.sub(r"\b([A-Za-z]\w*)_N\b", r"\1", why)  # view_N and view: one op


def origin_ops(why: str) -> str:
    """The FX ops an intermediate buffer came from, without their numbering: `from add_103, mul_5, mul_7` -> add, mul."""
    m = re.search(r"\(Inductor's own intermediate, from ([^)]*)\)", why)
    if not m:
        return ""
    return ", ".join(dict.fromkeys(re.sub(r"_\d+$", "", op.strip()) for op in m.group(1).split(",")))


def library_of(model: str) -> str:
    return model.split("_", 1)[0]


def zoo_markdown(matrix: dict) -> str:
    """docs/zoo.md's generated part: the table per model, the totals, extract errors, every FAIL (false FAILs
    first), and every kernel without a full eager reference grouped by its reason."""
    models, total, source = matrix["models"], matrix["total"], matrix["harvest_source"]
    shrink = matrix.get("shrink") or {}
    out = [f"Device: {matrix['device']}; torch {matrix['torch']}, triton {matrix['triton']}, python {matrix['python']}"
           + "".join(f", {name} {version}" for name, version in sorted((matrix.get("libraries") or {}).items())) + ".",
           f"harvest at the end of the run: {source.get('commit', '?')}"
           + (f" with uncommitted changes in {', '.join(source['uncommitted'])}" if source.get("uncommitted") else "")
           + f"; `--check` per module, timeout {matrix['timeout_s']:.0f} s"
           + (f"; modules whose recorded grid has more than {shrink['above']} programs checked with "
              f"`--check --shrink {shrink['programs']}` (column --shrink)" if shrink.get("above") else "") + ".", "",
           "Columns: kernels Inductor wrote (Triton), modules harvest wrote for them, modules whose `--check` passed; "
           "eager reference per kernel as the manifest counts it: full (every output the kernel writes), partial, "
           "none (a kernel without a module counts as none); outputs each oracle compared and found equal (recorded "
           "= the run's own tensors, reference = the eager reference); seconds of `harvest extract` and of all "
           "checks one after another; the harvest commit the model ran with (+: with uncommitted changes in "
           "harvest/ or templates/).", "",
           "| model | graphs | kernels | modules | pass | fail | crash / timeout | reference full / partial / none | "
           "outputs compared: recorded / reference | --shrink | extract | checks | harvest |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def row(name: str, c: dict, graphs: int, extract: str, checks: str, commit: str) -> str:
        return (f"| {name} | {graphs} | {c['kernels']} | {c['standalone']} | {c['passing']} | {c['fail']} | "
                f"{c['crash']} / {c['timeout']} | {c['reference_full']} / {c['reference_partial']} / "
                f"{c['reference_none']} | {c['outputs_recorded']} / {c['outputs_reference']} | {c['shrunk']} | "
                f"{extract} | {checks} | {commit} |")

    commits = Counter(m.get("harvest", "?") for m in models)
    for m in models:
        extract = seconds(m["extract_s"]) + ("" if m["extract_rc"] == 0 else f" (exit {m['extract_rc']})")
        commit = m.get("harvest", "?").replace(" + uncommitted changes", "+")
        out.append(row(m["model"], m["counts"], m["graphs"], extract, seconds(m["counts"]["check_s"]), commit))
    out.append(row("**total**", total, total["graphs"], seconds(total["extract_s"]), seconds(total["check_s"]), ""))
    kernels, full = total["kernels"], total["reference_full"]
    failed = [m for m in models if m["extract_rc"] != 0 or m.get("extract_error")]
    percent = lambda n: f"{100 * n / kernels:.1f} %" if kernels else "-"
    out += ["", "## Totals", "",
            f"- {len(models)} models, {len(models) - len(failed)} extracted; {kernels} kernels, {total['standalone']} "
            f"modules, {total['passing']} pass `--check` ({percent(total['passing'])}), {total['fail']} fail, "
            f"{total['crash']} crash, {total['timeout']} time out.",
            f"- Eager reference: **{full} of {kernels} kernels full ({percent(full)})**, {total['reference_partial']} "
            f"partial, {total['reference_none']} none (the goal of issue 45: at least 99 % full).",
            f"- Outputs compared and equal: {total['outputs_recorded']} against the record, "
            f"{total['outputs_reference']} against the eager reference.",
            f"- False FAILs (the record matched bit for bit, the reference disagreed): **{total['false_fail']}**.",
            f"- `harvest extract` {seconds(total['extract_s'])} in all; checks {seconds(total['check_s'])} one after "
            f"another.",
            "- harvest per model: " + ", ".join(f"{commit} ({n} models)" for commit, n in sorted(commits.items()))
            + ("" if len(commits) == 1 else " (the checkout changed during the run)") + "."]

    out += ["", "## Extract errors", ""]
    out += [f"- {m['model']}: exit {m['extract_rc']}: `{(m.get('extract_error') or ['no output'])[-1]}` "
            f"(`python -m harvest extract {m['target']} -o OUT/{m['model']} --device cpu`)" for m in failed] or ["- none"]

    fails = [(m, k) for m in models for k in m["kernels"] if k["status"] not in ("pass", "not standalone")]
    fails.sort(key=lambda mk: (not mk[1].get("false_fail"), mk[0]["model"], mk[1]["module"] or ""))
    out += ["", "## FAILs, crashes and timeouts", "",
            "A FAIL whose record matched bit for bit is a reference bug (**false FAIL**), listed first.", ""]
    for m, k in fails:
        label = "**false FAIL**" if k.get("false_fail") else k["status"]
        reason = "; ".join(k["reasons"]) + (f" ({k['detail']})" if k.get("detail") else "")
        out.append(f"- {label}: `{m['model']}/{k['module']}`: {reason}")
    if not fails:
        out.append("- none")
    unwritten = [(m, k) for m in models for k in m["kernels"] if k["status"] == "not standalone"]
    if unwritten:
        out += ["", "Kernels harvest wrote no module for:", ""]
        out += [f"- `{m['model']}/{k['graph']}/{k['kernel']}`: {'; '.join(k['reasons'])}" for m, k in unwritten]

    groups: dict[str, list[str]] = {}
    for m in models:
        for k in m["kernels"]:
            if k.get("reference") == "full":
                continue
            where = f"{m['model']}/{k['module'] or k['graph'] + '/' + k['kernel']}"
            whys = dict(k.get("unreferenced") or {})
            whys.update(k.get("not_computed") or {})
            if k["module"] is None:
                whys = {"(no module)": "no module: " + "; ".join(k["reasons"])}
            if not whys:
                whys = {"(all)": f"the manifest gives reference coverage '{k.get('reference')}' and no reason"}
            for output, why in sorted(whys.items()):
                ops, kind = origin_ops(why), reason_class(why)
                detail = f": from {ops}" if ops else (f": {why}" if re.search(r"\[|, from ", why) else "")
                groups.setdefault(kind, []).append(f"`{where}` {output} ({k.get('reference')})" + detail)
    out += ["", "## Kernels without a full eager reference, by reason", "",
            f"{total['reference_partial'] + total['reference_none']} kernels; one line per output the reference does "
            "not compute (model/module, output, the kernel's coverage; for an intermediate buffer the FX ops it came "
            "from). The check still compares these outputs against the record.", ""]
    for why, members in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        out.append(f"### {why} ({len(members)})")
        out.append("")
        out += [f"- {member}" for member in members]
        out.append("")
    if not groups:
        out.append("- none")
    return "\n".join(out).rstrip() + "\n"


def write_doc(doc: Path, text: str) -> None:
    """Put text between the zoo markers of doc (appended with its markers when they are not there yet)."""
    old = doc.read_text(encoding="utf-8") if doc.exists() else ""
    block = f"{ZOO_BEGIN}\n\n{text}\n{ZOO_END}"
    if ZOO_BEGIN in old and ZOO_END in old:
        head, rest = old.split(ZOO_BEGIN, 1)
        new = head + block + rest.split(ZOO_END, 1)[1]
    else:
        new = old + ("\n" if old and not old.endswith("\n") else "") + block + "\n"
    doc.write_text(new, encoding="utf-8")


def library_versions() -> dict:
    """The versions of the zoo's libraries the children import (absent ones left out)."""
    code = ("import importlib.metadata as m, json\nout = {}\n"
            "for name in ('torchvision', 'transformers', 'timm', 'diffusers'):\n"
            "    try:\n        out[name] = m.version(name)\n    except m.PackageNotFoundError:\n        pass\n"
            "print(json.dumps(out))")
    done = subprocess.run([sys.executable, "-c", code], env=child_env("cpu"), capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else {}


def harvest_source(device: str) -> dict:
    """Which harvest the children import, and the git state of its checkout (harvest/ and templates/ edits)."""
    found = subprocess.run([sys.executable, "-c", "import harvest; print(harvest.__file__)"], env=child_env(device),
                           cwd=ROOT, capture_output=True, text=True)
    path = Path(found.stdout.strip()).parent.parent if found.returncode == 0 else None
    source = {"path": str(path) if path else f"import failed: {last_lines(found.stderr, 1)}"}
    if path is None:
        return source

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else None

    commit = (git("rev-parse", "--short", "HEAD") or "").strip() or None
    if commit is None:
        source["commit"] = "not a git checkout"
        return source
    source["commit"] = commit
    changed = git("status", "--porcelain", "--", "harvest", "templates") or ""
    source["uncommitted"] = sorted(line[3:] for line in changed.splitlines())
    return source


def resolve_device(requested: str) -> str:
    if requested != "auto":
        return requested
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", type=Path, help="scripts (default: examples/models/*.py)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/harvest-matrix"), help="output directory")
    parser.add_argument("--no-plain", action="store_true", help="skip the plain run of each target (no ratio; saves GPU time)")
    parser.add_argument("--jobs", type=int, default=2, help="modules checked in parallel (default 2)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per module --check (default 300)")
    parser.add_argument("--extract-timeout", type=int, default=1800,
                        help="seconds for the plain run and for harvest extract (default 1800; 0: no limit)")
    parser.add_argument("--device", choices=["cpu", "cuda", "auto"], default="auto",
                        help="passed to harvest extract (auto: CUDA when torch sees a GPU)")
    parser.add_argument("--zoo", action="store_true", help="every examples/zoo/*.py (with TARGETs: those as well)")
    parser.add_argument("--plain", action="store_true", help="with --zoo: do the plain run of each target too")
    parser.add_argument("--shrink-above", type=int, default=None, metavar="PROGRAMS",
                        help="check modules whose recorded grid has more programs than this with --shrink "
                             "(default: 4096 with --zoo, never otherwise; 0: never)")
    parser.add_argument("--shrink", type=int, default=64, metavar="N", help="programs --shrink runs (default 64)")
    parser.add_argument("--doc", type=Path, help="write the zoo table into this markdown file (between its markers)")
    parser.add_argument("--resume", action="store_true",
                        help="take OUT/models/<stem>.json of a target that has not changed instead of running it")
    options = parser.parse_args()
    targets = [t.resolve() for t in options.targets] or ([] if options.zoo else sorted((ROOT / "examples" / "models").glob("*.py")))
    if options.zoo:
        targets += [t for t in sorted(ZOO.glob("*.py")) if t not in targets]
        options.no_plain = options.no_plain or not options.plain
    if options.shrink_above is None:
        options.shrink_above = 4096 if options.zoo else 0
    missing = [str(t) for t in targets if not t.is_file()]
    if missing:
        parser.error(f"no such target: {', '.join(missing)}")
    if not targets:
        parser.error("no targets")
    stems = Counter(t.stem for t in targets)
    if any(n > 1 for n in stems.values()):
        parser.error(f"two targets with the same name: {[s for s, n in stems.items() if n > 1]}")
    options.out = options.out.resolve()
    options.out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(options.device)

    import torch
    import triton

    models = []
    saved = options.out / "models"
    saved.mkdir(exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        for target in targets:
            kept = saved / f"{target.stem}.json"
            if options.resume and kept.exists():
                model = json.loads(kept.read_text(encoding="utf-8"))
                if model.get("target_sha256") == target_digest(target) and model.get("extract_rc") == 0:
                    print(f"[{target.stem}] --resume: kept {display_path(kept)}", file=sys.stderr, flush=True)
                    models.append(model)
                    continue
            model = run_model(target, options, device, pool)
            model["failure_groups"] = failure_groups(model["kernels"])
            kept.write_text(json.dumps(model, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            models.append(model)
            c = model["counts"]
            print(f"[{model['model']}] {c['passing']}/{c['kernels']} pass ({c['standalone']} standalone)",
                  file=sys.stderr, flush=True)
    models.sort(key=lambda m: m["model"])

    total = {key: sum(m["counts"][key] for m in models) for key in models[0]["counts"] if key != "percent"}
    total["percent"] = round(100 * total["passing"] / total["kernels"], 1) if total["kernels"] else 0.0
    total["graphs"] = sum(m["graphs"] for m in models)
    total["extract_s"] = round(sum(m["extract_s"] for m in models), 2)
    total["plain_s"] = round(sum(m["plain_s"] for m in models), 2)
    total["raw_bytes"] = sum(m["raw_bytes"] for m in models)
    everything = [dict(k, module=k["module"] and f"{m['model']}/{k['module']}",
                       inductor_name=f"{m['model']}/{k['inductor_name']}") for m in models for k in m["kernels"]]
    matrix = {
        "failure_groups": failure_groups(everything),
        "device": device if device == "cuda" else "cpu (Triton interpreter)",
        "torch": torch.__version__, "triton": triton.__version__, "python": ".".join(map(str, sys.version_info[:3])),
        "timeout_s": options.timeout,
        "harvest_source": harvest_source(device),
        "shrink": {"above": options.shrink_above, "programs": options.shrink} if options.shrink_above else None,
        "libraries": library_versions() if options.zoo or options.doc else None,
        "models": models,
        "total": total,
    }
    (options.out / "matrix.json").write_text(json.dumps(matrix, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (options.out / "matrix.md").write_text(markdown(matrix) + "\n", encoding="utf-8")
    if options.zoo or options.doc:
        (options.out / "zoo.md").write_text(zoo_markdown(matrix), encoding="utf-8")
    if options.doc:
        write_doc(options.doc, zoo_markdown(matrix))

    print("\n".join(summary_table(models, total)))
    print("\nfailure reasons over all models (a kernel with several problems counts under each):")
    for g in matrix["failure_groups"]:
        print(f"  x{g['count']} {g['group']}  (e.g. {g['example']})")
    print(f"\nwritten: {options.out / 'matrix.json'}, {options.out / 'matrix.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
