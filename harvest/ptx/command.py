"""`harvest ptx PATH`: every kernel module under PATH compiled both ways, compared, written next to the module, and
recorded in the manifest and report."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harvest.errors import HarvestError, ParseError, ToolchainError, UsageError
from harvest.nvcc import find_nvcc
from harvest.ptx.module import Arch, KernelModule, compile_args, parse_arch, read_kernel_module
from harvest.ptx.tables import CompiledSide, KernelPtx, plan_files
from harvest.ptx.text import diff_counts, instruction_mix, normalize_ptx
from harvest.ptx.toolchain import assemble, compile_triton_ptx, compile_twin_ptx, tool_version
from harvest.report import manifest_problem
from harvest.text_output import plural
from harvest.twin.no_twin import NO_TWIN_KINDS
from harvest.writer import sha256, write_file, write_manifest

Progress = Callable[[str], None]


# ------------------------------------------------------------------------------------ the command (edges)


@dataclass
class PtxRun:
    """What `harvest ptx` did: per kernel its result or error, and the files it wrote."""

    extraction: Path | None
    arch: Arch
    kernels: int = 0  # how many kernel modules were asked for
    results: list[KernelPtx] = field(default_factory=list)
    errors: list[tuple[str, HarvestError]] = field(default_factory=list)  # (module, error)
    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _manifest(directory: Path) -> dict | None:
    path = directory / "manifest.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ParseError(f"{path} is not valid JSON ({exc}); re-run `harvest extract` to rewrite it") from exc
    problem = manifest_problem(data) if isinstance(data, dict) else ""
    if problem:
        raise ParseError(f"{path} is not a manifest harvest wrote ({problem}); run `harvest extract {directory}` to rewrite it from raw/")
    return data if isinstance(data, dict) else None


def resolve_targets(target: Path) -> tuple[Path | None, list[Path]]:
    """(extraction directory or None, kernel modules) for KERNEL, OUT or OUT/<graph>."""
    if not target.exists():
        raise UsageError(f"{target} does not exist: pass a kernel module (OUT/<graph>/<kernel>.py), an extraction OUT or OUT/<graph>")
    if target.is_file():
        if target.suffix != ".py":
            raise UsageError(f"{target} is not a kernel module: pass OUT/<graph>/<kernel>.py written by `harvest extract`")
        out = target.resolve().parent.parent
        return (out if (out / "manifest.json").is_file() else None), [target]
    if (target / "manifest.json").is_file():
        out, graph = target, None
    elif (target.parent / "manifest.json").is_file():
        out, graph = target.parent, target.name
    else:
        raise UsageError(f"{target} holds no manifest.json and neither does its parent: pass a directory written by `harvest extract`")
    manifest = _manifest(out) or {}
    modules = list(dict.fromkeys(  # once each: a torchrun job's graphs share the modules of kernels every rank compiled alike
        out / k["module"]
        for g in manifest.get("graphs", [])
        if graph is None or g.get("name") == graph
        for k in g.get("kernels", [])
        if k.get("module") and (out / k["module"]).is_file()
    ))
    if not modules:
        where = f"graph {graph} of {out}" if graph else str(out)
        raise UsageError(f"no kernel modules in {where}: nothing to compile")
    return out, modules


def _kernel_entry(manifest: dict | None, module: str) -> dict | None:
    return next(iter(_kernel_entries(manifest, module)), None)


def _kernel_entries(manifest: dict | None, module: str) -> list[dict]:
    """Every manifest entry of `module`: more than one in a torchrun job, where the ranks' graphs share a module."""
    return [kernel for graph in (manifest or {}).get("graphs", []) for kernel in graph.get("kernels", [])
            if kernel.get("module") == module]


def _twin_note(entry: dict | None, cu: Path, label: str) -> str:
    twin = (entry or {}).get("twin")
    if isinstance(twin, dict) and twin.get("status") not in (None, "ok"):
        return f"no twin: {twin.get('reason') or twin.get('status')}"
    if isinstance(twin, dict) and twin.get("status") == "ok":
        return f"no twin: the manifest says there is one, but {label} is missing (re-run `harvest twin`)"
    if (entry or {}).get("kind") in NO_TWIN_KINDS:
        return f"no twin: {NO_TWIN_KINDS[entry['kind']]}"  # type: ignore[index]
    return f"no twin: {label} does not exist (`harvest twin` writes it)"


def ptx_command(target: Path, arch_text: str = "sm_90", on_progress: Progress | None = None) -> PtxRun:
    """`harvest ptx TARGET --arch ARCH`: compile, compare and write, for one kernel module or every one in OUT[/graph].

    Errors of one kernel (a refused region, a Triton compile error) are collected in `run.errors` and the others go
    on; a missing nvcc (with a twin to compile) stops the command.
    """
    progress = on_progress or (lambda _message: None)
    arch = parse_arch(arch_text)
    out, paths = resolve_targets(Path(target))
    manifest = _manifest(out) if out else None
    run = PtxRun(out, arch, kernels=len(paths))
    modules: list[tuple[Path, str, KernelModule | None]] = []
    for path in paths:
        label = path.resolve().relative_to(out.resolve()).as_posix() if out else path.name
        try:
            text = path.read_text(encoding="utf-8")
            if "# >>> kernel" not in text:  # not a module harvest wrote at all: the user pointed at the wrong file
                raise UsageError(f"{label} is not a kernel module: it has no '# >>> kernel' ... '# <<< kernel' region (pass a module `harvest extract` wrote)")
            module = read_kernel_module(text, label)
            compile_args(module)  # a module whose launch cannot be specialized is this kernel's error, before any compile
            modules.append((path, label, module))
        except HarvestError as exc:
            run.errors.append((label, exc))
            modules.append((path, label, None))
    readable = [m for _, _, m in modules if m is not None]
    compiled = compile_triton_ptx(readable, arch, (manifest or {}).get("torch"))  # the helpers the harness holds
    try:
        _compare_and_write(modules, compiled, arch, manifest, run, progress)
    finally:
        compiled.close()  # a stop on the way (no nvcc) ends the Triton child too
    if out is not None and manifest is not None and run.results:
        run.notes += _update_manifest(out, manifest, run)
    return run


def _compare_and_write(modules, compiled, arch: Arch, manifest: dict | None, run: PtxRun, progress: Progress) -> None:
    """For each module in order: its Triton PTX (from `compiled`), its twin's, the comparison, the files."""
    nvcc: Path | None = None
    with tempfile.TemporaryDirectory(prefix="harvest-ptx-") as scratch_dir:
        scratch = Path(scratch_dir)
        for index, (path, label, module) in enumerate(modules, start=1):
            prefix = f"[{index}/{len(modules)}] {label}"
            if module is None:
                if len(modules) > 1:  # one kernel: its error is the command's one line
                    progress(f"{prefix}: error: {next(str(e) for m, e in run.errors if m == label)}")
                continue
            triton_ptx = next(compiled)
            if isinstance(triton_ptx, HarvestError):
                run.errors.append((label, triton_ptx))
                if len(modules) > 1:
                    progress(f"{prefix}: error: {triton_ptx}")
                continue
            cu = path.parent / "twin" / f"{path.stem}.cu"
            cu_label = (Path(label).parent / "twin" / cu.name).as_posix()
            triton_side = _side("Triton", label, f"Triton {triton_ptx.triton_version}, offline for GPUTarget(\"cuda\", {arch.capability}, 32)", triton_ptx.ptx, scratch, f"{path.stem}.triton")
            twin_side, twin_note = None, ""
            if cu.is_file():
                nvcc = nvcc or find_nvcc()
                try:
                    twin_text = compile_twin_ptx(cu, arch, nvcc, cu_label)
                except ToolchainError as exc:  # this kernel's twin is broken: say so, keep its Triton side, go on
                    run.errors.append((label, exc))
                    twin_note = f"twin not compiled: {exc}"
                else:
                    how = f"`nvcc -ptx -arch={arch.name}` (nvcc {tool_version(nvcc)})"
                    twin_side = _side("twin", cu_label, how, twin_text, scratch, f"{path.stem}.twin", nvcc)
            else:
                twin_note = _twin_note(_kernel_entry(manifest, label), cu, cu_label)
            args = compile_args(module)
            launch = tuple(args.describe(module.params)) + tuple(f"{k}={v}" for k, v in args.options.items())
            toolchain = {"triton": triton_ptx.triton_version, "nvcc": tool_version(nvcc) if twin_side and nvcc else None}
            result = KernelPtx(label, module.name, arch, triton_side, twin_side, twin_note, launch, toolchain)
            files = plan_files(result)
            stale = [p for p in (path.parent / "ptx").glob(f"{path.stem}.*") if f"ptx/{p.name}" not in files and _is_ours(p, path.stem)]
            for p in stale:
                p.unlink()
            for relative, text in files.items():
                write_file(path.parent / relative, text)
                run.written.append(path.parent / relative)
            run.results.append(result)
            progress(f"{prefix}: {_one_line(result)}")


def _is_ours(path: Path, stem: str) -> bool:
    """A file `harvest ptx` writes for this kernel stem (so a stale one may be removed)."""
    return path.name in {f"{stem}.{suffix}" for suffix in ("triton.ptx", "triton.norm.ptx", "triton.sass", "twin.ptx", "twin.norm.ptx", "twin.sass", "ptx.diff", "ptx.md")}


def _side(label: str, source: str, how: str, ptx: str, scratch: Path, stem: str, nvcc: Path | None = None) -> CompiledSide:
    normalized = normalize_ptx(ptx)
    resources, note, sass, sass_note = assemble(ptx, scratch, stem, nvcc)
    return CompiledSide(label, source, how, ptx, normalized, instruction_mix(normalized), resources, note, sass, sass_note)


def _one_line(result: KernelPtx) -> str:
    def side(s: CompiledSide) -> str:
        summary = s.summary()
        regs = f", {plural(summary['registers'], 'register')}, {summary['spill_bytes']} B spilled" if "registers" in summary else ""
        return f"{s.label} {plural(summary['instructions'], 'instruction')}{regs}, ld.global {summary['ld_global']}"

    text = side(result.triton)
    if result.twin is not None:
        only_triton, only_twin = diff_counts(result.diff())
        return f"{text} | {side(result.twin)} | diff -{only_triton} +{only_twin}"
    return f"{text} | {result.twin_note}"


def _update_manifest(out: Path, manifest: dict, run: PtxRun) -> list[str]:
    """Each compiled kernel's summary under its manifest entry's "ptx"; the files in generated_files; the reports again."""
    from harvest.report_html import refresh_reports

    generated = manifest.setdefault("generated_files", {})
    for result in run.results:
        entries = _kernel_entries(manifest, result.module)
        if not entries:
            continue
        graph_dir = Path(result.module).parent
        md = next(p for p in result.files if p.endswith(".ptx.md"))
        for entry in entries:
            entry["ptx"] = result.manifest_entry((graph_dir / md).as_posix())
        for relative in [p for p in generated if p.startswith((graph_dir / "ptx").as_posix() + "/") and Path(p).name.startswith(Path(result.module).stem + ".")]:
            del generated[relative]
        for relative, text in result.files.items():
            generated[(graph_dir / relative).as_posix()] = sha256(text)
    written, notes = refresh_reports(out, manifest)  # it keeps generated_files sorted
    run.written += written
    write_manifest(out, manifest)
    run.written.append(out / "manifest.json")
    return notes
