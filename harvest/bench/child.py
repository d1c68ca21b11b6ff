"""Child side of `harvest bench`: everything that runs code on the GPU, in a process of its own.

Run by harvest.bench.children as `python -m harvest.bench.child PLAN.json RESULTS.json` (and, before it, as
`python -m harvest.bench.child --warm PLAN.json K N` in N processes that compile every kernel and swept config
once, in parallel, into Triton's cache: compiling is CPU work, and the timing child then only loads binaries). harvest never imports the files it
reads in its own process; this child runs them for the user, as the plan says:

  * each kernel module is imported by path and timed by its own bench() — the lines of harvest/bench/timing.py it carries,
    so `python k.py --bench` and harvest bench measure the same way;
  * a graph's raw/<graph>/output_code.py (Inductor's wrapper module) is imported only when the plan allows it (the
    extraction was made by running a target, or the user passed --run-artifact): its call(get_args()) runs under the
    profiler, which gives each kernel's device time inside its graph, and its kernel objects (Inductor's own
    launchers, pinned to the config the run used) are launched alone on the module's inputs (harvest.bench.inductor);
  * sweeps (each config checked once against the record before it is timed), profiler tables, the Chrome trace.

RESULTS.json is rewritten after every kernel, and its "current" names the kernel in progress: a crash (a sticky CUDA
error, say) loses that kernel only, and the parent starts a new child for the rest. Progress lines go to stderr
with the "[harvest] " prefix. With check_only (no GPU, TRITON_INTERPRET=1) only the sweep's correctness gate runs.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import sys
import traceback
from pathlib import Path

from harvest.bench.inductor import (
    alone,
    example_inputs,
    flushed_before_each_kernel,  # noqa: F401  (tests import it from here, where it was)
    in_graph,
    pin_winners,
)
from harvest.imports import import_file
from harvest.text_output import plural

PROGRESS = "[harvest] "


def progress(message: str) -> None:
    print(PROGRESS + message, file=sys.stderr, flush=True)


def load_module(path: str, name: str, register: bool = False):
    """Import a file by path under a name of our own; `register` puts it in sys.modules (wrapper modules: Inductor's
    code may look itself up there), kernel modules are not, so they go once their bench is done."""
    return import_file(path, name, register)


def forget_other_harness(module_path: str) -> None:
    """A kernel module imports `harness` from its own extraction: in a process that loads modules of several
    extractions, an already imported harness.py of another one must not answer for it."""
    harness = sys.modules.get("harness")
    own = os.path.dirname(os.path.dirname(os.path.abspath(module_path)))
    if harness is not None and os.path.dirname(os.path.abspath(getattr(harness, "__file__", "") or "")) != own:
        del sys.modules["harness"]


def load_kernel_module(path: str, name: str):
    """A kernel module imported by path, with its extraction's harness bound to it (`harness.Kernel`): its launch,
    CONFIG, OUTPUTS and reference, and the harness's load_record, make_inputs, bench_inputs, bench and compare."""
    forget_other_harness(path)
    module = load_module(path, name)
    main = getattr(module, "main", None)
    harness = sys.modules.get(getattr(main, "__module__", ""))
    if harness is None or not hasattr(harness, "Kernel"):
        raise RuntimeError("the module was written by an older harvest (no harness.py beside its graph); replay the extraction to renew it: harvest extract <extraction dir>")
    return harness.Kernel(vars(module))


def error_text(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[:1]
    return f"{type(exc).__name__}: {first[0] if first else ''}".rstrip(": ")


class Results:
    """RESULTS.json, kept on disk after every change."""

    def __init__(self, path: Path):
        self.path = path
        self.data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"graphs": {}, "kernels": {}}

    def save(self) -> None:
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, self.path)


def _device_ok() -> bool:
    """False once the CUDA context is broken (an illegal address sticks until the process ends)."""
    import torch

    try:
        torch.cuda.synchronize()
        return True
    except Exception:
        return False


# -- one kernel module -------------------------------------------------------------------------------------------------


def jit_name(module, display_name: str) -> str:
    """The name the GPU knows the module's kernel by (the @triton.jit function's)."""
    from triton.runtime.jit import JITFunction

    names = [v.__name__ for v in module.namespace.values() if isinstance(v, JITFunction) or type(v).__name__ == "InterpretedFunction"]
    return display_name if display_name in names or not names else names[0]


def _storages(args: dict) -> list:
    """The distinct storages under the arguments' tensors, as uint8 tensors (to copy pristine bytes back)."""
    import torch

    seen = {}
    for value in args.values():
        if isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            if storage.data_ptr() not in seen:
                seen[storage.data_ptr()] = torch.empty(0, dtype=torch.uint8, device=value.device).set_(storage)
    return list(seen.values())


def sweep(module, configs: list[dict], device: str, check_only: bool, flush, rep_ms: float) -> list[dict]:
    """Each config: launched once on the run's recorded inputs and compared with what Inductor's kernel wrote
    (dtype tolerances; bit for bit for the kernel's own config where --check would be); timed only if it matches."""
    import torch

    from harvest.bench.timing import time_gpu

    record = module.load_record(device)
    if record is not None:
        args, expected = record
        oracle = "record"
    else:  # no record: the kernel's own config on made-up inputs is the yardstick
        args = module.make_inputs(device, 0)
        oracle = "the kernel's own config (no record)"
        expected = None
    live = _storages(args)
    pristine = [storage.clone() for storage in live]

    def restore() -> None:
        for target, source in zip(live, pristine):
            target.copy_(source)

    if expected is None:
        module.launch(**args, config=module.CONFIG)
        expected = {name: args[name].clone() for name in module.OUTPUTS}
    exact = record is not None and module.EXACT_POSSIBLE and module.unedited() and module.this_device(device) == module.RECORD_DEVICE
    rows = []
    for index, config in enumerate(configs):
        restore()
        row = {"config": config, "check": "", "oracle": oracle}
        try:
            module.launch(**args, config=config)
            if device != "cpu":
                torch.cuda.synchronize()
            tolerance = module.EXACT if exact and config == module.CONFIG else None
            with contextlib.redirect_stdout(io.StringIO()) as said:
                ok = all([module.compare(name, args[name], expected[name], oracle, tolerance) for name in module.OUTPUTS if name in expected])
            row["check"] = "ok" if ok else "MISMATCH: " + " ".join(said.getvalue().split())[:300]
        except Exception as exc:  # a config that does not compile (too much shared memory, ...) is a result too
            row["check"] = "failed: " + error_text(exc)
            if device != "cpu" and not _device_ok():
                rows.append(row)
                raise
        if row["check"] == "ok" and not check_only:
            try:
                row["timing"] = time_gpu(lambda config=config: module.launch(**args, config=config), flush, warmup_ms=10.0, rep_ms=rep_ms)
            except Exception as exc:
                row["check"] = "failed while timing: " + error_text(exc)
        rows.append(row)
        if (index + 1) % 8 == 0:
            progress(f"  sweep: {index + 1} of {plural(len(configs), 'config')}")
    return rows


def op_table(fn, reps: int = 5) -> tuple[str, list[str]]:
    """The profiler's op table of fn (sorted by device time) and the ATen ops it dispatched."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    gpu = torch.cuda.is_available()
    fn()
    if gpu:
        torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])) as prof:
        for _ in range(reps):
            fn()
        if gpu:
            torch.cuda.synchronize()
    averages = prof.key_averages()
    table = ""
    for key in ("device_time_total", "cuda_time_total"):
        try:
            table = averages.table(sort_by=key, row_limit=12)
            break
        except (AttributeError, KeyError, ValueError):
            continue
    ops = [event for event in averages if event.key.startswith("aten::")]

    def device_us(event) -> float:
        return float(getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0) or 0)

    launching = [event for event in ops if device_us(event) > 0]  # the ops that ran kernels: aten::pow, not result_type
    return table, sorted({event.key for event in (launching or ops)})


def bench_kernel(job: dict, graph_module, plan: dict, results: Results, flush) -> dict:
    """Every figure of one kernel; a step that fails is noted and the next one still runs."""
    from harvest.bench.timing import device_times, summarize, time_gpu

    device = plan["device"]
    entry: dict = {"errors": {}}
    module = load_kernel_module(job["module"], f"harvest_bench_kernel_{job['id']}")
    if plan["check_only"]:
        entry["sweep"] = sweep(module, job["sweep"], device, True, None, 0.0)
        return entry
    steps = []
    inputs = module.bench_inputs(device)
    args = inputs[0]
    name = jit_name(module, job["display_name"])

    def own_bench() -> None:
        entry["bench"] = module.bench(device, copy_gbps=results.data["copy_gbps"], inputs=inputs)

    tuner = getattr(graph_module, job["inductor"], None) if graph_module is not None else None
    launch_alone = alone(tuner, args, job.get("grid"), job.get("inductor_args")) if tuner is not None else None

    def profiled() -> None:
        """The profiler's device times of the extracted kernel and (when there is one) Inductor's kernel alone, in
        one session when their names differ: each call of the pair flushes L2 before each kernel."""
        def own() -> None:
            module.launch(**args)

        pairs = [(own, name)]
        if launch_alone is not None:
            pairs.append((launch_alone, job["inductor"]))
        sessions = [pairs] if len({n for _, n in pairs}) == len(pairs) else [[pair] for pair in pairs]
        times: dict[str, list] = {}
        for session in sessions:
            def both(session=session) -> None:
                for index, (fn, _) in enumerate(session):
                    if index:
                        flush.zero_()
                    fn()

            times.update(device_times(both, [n for _, n in session], flush))
        mine = summarize(times.get(name, []))
        entry["extracted_device"] = mine._asdict() if mine else None
        if launch_alone is not None:
            theirs = summarize(times.get(job["inductor"], []))
            entry["inductor_alone_device"] = theirs._asdict() if theirs else None

    steps += [("bench", own_bench)]
    if launch_alone is not None:
        def inductor_alone() -> None:
            entry["inductor_alone"] = time_gpu(launch_alone, flush)

        steps.append(("Inductor's kernel alone", inductor_alone))
    steps.append(("device times (profiler)", profiled))
    if job.get("sweep"):
        def run_sweep() -> None:
            progress(f"  sweep: {plural(len(job['sweep']), 'config')}, each checked against the record before it is timed")
            entry["sweep"] = sweep(module, job["sweep"], device, False, flush, plan["sweep_rep_ms"])

        steps.append(("sweep", run_sweep))
    if plan.get("profile"):
        def tables() -> None:
            reference_args = [args[p] for p in inspect.signature(module.reference).parameters]
            entry["eager_table"], entry["eager_aten"] = op_table(lambda: module.reference(*reference_args))
            entry["extracted_table"], _ = op_table(lambda: module.launch(**args))

        steps.append(("profile", tables))
    for step, run in steps:
        try:
            run()
        except Exception as exc:
            entry["errors"][step] = error_text(exc)
            progress(f"  {step}: {error_text(exc)}")
            if not _device_ok():
                results.data["kernels"][str(job["id"])] = entry
                results.save()
                raise
    return entry


def trace(plan: dict, graphs: dict, path: str, device: str) -> None:
    """One Chrome trace of a short rerun of everything: each graph's call(), each kernel's eager reference and its
    extracted launch, every part under a named range."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    kernels = []
    for job in plan["kernels"]:
        try:
            module = load_kernel_module(job["module"], f"harvest_trace_kernel_{job['id']}")
            args, _ = module.bench_inputs(device)
            reference_args = [args[p] for p in inspect.signature(module.reference).parameters]
            kernels.append((job, module, args, reference_args))
        except Exception as exc:
            progress(f"trace: {job['module']}: {error_text(exc)}")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for name, (module, inputs) in graphs.items():
            with record_function(f"Inductor graph {name}: call()"):
                for _ in range(2):
                    module.call(list(inputs))
        for job, module, args, reference_args in kernels:
            with record_function(f"eager reference {job['label']}"):
                for _ in range(3):
                    module.reference(*reference_args)
            with record_function(f"extracted {job['label']}"):
                for _ in range(3):
                    module.launch(**args)
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)


def warm(plan: dict, worker: int, workers: int) -> int:
    """Compile ahead, in one of several processes: every `workers`-th (kernel, config) of the plan, from `worker` on,
    is launched once, so Triton's on-disk cache holds its binary when the timing child (alone on the GPU) gets to it.
    Nothing is timed here; a failure is left for the timing child to report."""
    import torch

    items = [(job, None) for job in plan["kernels"]]
    items += [(job, config) for job in plan["kernels"] for config in (job.get("sweep") or [])[1:]]
    loaded: dict[int, tuple] = {}
    for job, config in items[worker::workers]:
        try:
            if job["id"] not in loaded:
                module = load_kernel_module(job["module"], f"harvest_warm_{job['id']}")
                loaded.clear()  # one module's inputs on the GPU at a time
                loaded[job["id"]] = (module, module.bench_inputs(plan["device"])[0])
            module, args = loaded[job["id"]]
            module.launch(**args, config=config or module.CONFIG)
            torch.cuda.synchronize()
        except Exception:
            if not _device_ok():
                return 3
    return 0


def main(argv: list[str]) -> int:
    if argv[0] == "--warm":
        return warm(json.loads(Path(argv[1]).read_text(encoding="utf-8")), int(argv[2]), int(argv[3]))
    plan = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    results = Results(Path(argv[1]))
    device = plan["device"]
    import torch
    import triton

    from harvest.bench.timing import copy_bandwidth, l2_flush_buffer

    flush = None
    if not plan["check_only"]:
        flush = l2_flush_buffer(device)
        if "copy_gbps" not in results.data:
            results.data["env"] = {
                "gpu": torch.cuda.get_device_name(device), "torch": torch.__version__, "triton": triton.__version__,
                "python": sys.version.split()[0],
            }
            progress("timing a device-to-device copy: the yardstick for every GB/s")
            results.data["copy_gbps"] = copy_bandwidth(flush, device)
            results.save()
    kept_graphs: dict[str, tuple] = {}
    for index, graph in enumerate(plan["graphs"]):
        jobs = [job for job in plan["kernels"] if job["graph"] == graph["name"] and str(job["id"]) not in results.data["kernels"]]
        done = graph["name"] in results.data["graphs"]
        if not jobs and (done or not graph["run"]):
            continue
        graph_module = inputs = None
        failed_before = "error" in results.data["graphs"].get(graph["name"], {})
        if graph["run"] and not plan["check_only"] and not failed_before:
            try:
                if done:  # a restarted child: the graph was measured; its kernels are needed again to launch alone
                    graph_module = load_module(graph["raw"], f"harvest_bench_graph_{index}", register=True)
                    pin_winners(graph_module, graph["winners"])
                    inputs = example_inputs(graph_module, graph)
                else:
                    progress(f"{graph['name']}: running Inductor's call() under the profiler ({plural(plan['graph_iterations'], 'call')})")
                    loaded = load_module(graph["raw"], f"harvest_bench_graph_{index}", register=True)
                    results.data["current_graph"] = graph["name"]  # a crash in here: the parent notes it, the next child skips it
                    results.save()
                    inputs, kernels, step = in_graph(loaded, graph, flush, plan["graph_iterations"])
                    graph_module = loaded  # only once it ran: a graph that failed has no kernels to launch alone
                    results.data.pop("current_graph", None)
                    results.data["graphs"][graph["name"]] = {"kernels": kernels, "step": step}
                    results.save()
                if plan.get("profile"):
                    kept_graphs[graph["name"]] = (graph_module, inputs)
            except Exception as exc:
                results.data.pop("current_graph", None)
                results.data["graphs"][graph["name"]] = {"error": error_text(exc), "traceback": traceback.format_exc()[-2000:]}
                results.save()
                progress(f"{graph['name']}: Inductor's module did not run: {error_text(exc)}")
                if not _device_ok():
                    return 3
        for job in jobs:
            progress(f"{job['label']}")
            results.data["current"] = job["id"]
            results.save()
            try:
                entry = bench_kernel(job, graph_module, plan, results, flush)
            except Exception as exc:
                if device != "cpu" and not _device_ok():
                    return 3  # the parent restarts a child for the kernels after this one
                entry = {"errors": {"module": error_text(exc)}}
                progress(f"  {error_text(exc)}")
            results.data["kernels"][str(job["id"])] = entry
            results.data.pop("current", None)
            results.save()
            if not plan["check_only"]:
                torch.cuda.empty_cache()  # the module's inputs are gone with bench_kernel's frame
        if graph["name"] not in kept_graphs:
            graph_module = inputs = None
            if not plan["check_only"]:
                torch.cuda.empty_cache()
    if plan.get("profile") and plan.get("trace"):
        progress(f"Chrome trace of a short rerun: {plan['trace']}")
        try:
            trace(plan, kept_graphs, plan["trace"], device)
        except Exception as exc:
            results.data["trace_error"] = error_text(exc)
            results.save()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
