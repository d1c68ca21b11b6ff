"""The compilers `harvest ptx` uses (the edges): finding ptxas and cuobjdump (nvcc: harvest.nvcc), assembling PTX,
the twin's `nvcc -ptx`, and Triton's own compile in a child process (`python -m harvest.ptx`)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvest.errors import HarvestError, ParseError, ToolchainError
from harvest.nvcc import executable, find_nvcc
from harvest.ptx.module import CHILD_PREFIX, Arch, KernelModule, check_kernel_region, compile_args
from harvest.ptx.text import Resources, parse_ptxas_log, portable_file_paths, ptx_header

# --------------------------------------------------------------------------------------- tools (edges)


def toolchain_versions() -> dict[str, str | None]:
    """The Triton and nvcc versions `harvest ptx` would use here (what its output depends on); None when absent."""
    from importlib import metadata

    try:
        triton = metadata.version("triton")
    except metadata.PackageNotFoundError:
        triton = None
    try:
        nvcc: str | None = tool_version(find_nvcc())
    except ToolchainError:
        nvcc = None
    return {"triton": triton, "nvcc": nvcc}


def _triton_bin() -> Path | None:
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "backends" / "nvidia" / "bin"


def tool_candidates(name: str, nvcc: Path | None = None) -> list[Path]:
    """Where a CUDA tool (ptxas, nvdisasm, cuobjdump) may be: Triton's wheel first, then beside nvcc, then PATH."""
    names = ["ptxas-blackwell", "ptxas"] if name == "ptxas" else [name]
    found: list[Path] = []
    if name == "ptxas" and os.environ.get("TRITON_PTXAS_PATH"):
        found.append(Path(os.environ["TRITON_PTXAS_PATH"]))
    bins = [_triton_bin(), nvcc.parent if nvcc else None]
    for directory in bins:
        for candidate in names:
            if directory and executable(directory / candidate):
                found.append(directory / candidate)
    on_path = shutil.which(name)
    if on_path:
        found.append(Path(on_path))
    unique: list[Path] = []
    for path in found:
        if path.resolve() not in [u.resolve() for u in unique]:
            unique.append(path)
    return unique


def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or "fatal" in line.lower()]
    return (errors or lines or ["(no output)"])[0]


def tool_version(tool: Path) -> str:
    try:
        out = subprocess.run([str(tool), "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return "?"
    match = re.search(r"release (\d+\.\d+)", out)
    return match.group(1) if match else "?"


def assemble(ptx: str, scratch: Path, stem: str, nvcc: Path | None = None) -> tuple[dict[str, Resources], str, str, str]:
    """Run `ptxas -v` on a PTX text for the PTX's own .target: (resources, note, sass, sass note).

    Tries each ptxas candidate until one accepts the PTX's .version (Triton's ptxas may be older or newer than
    nvcc's). SASS comes from the cubin through nvdisasm, else cuobjdump; missing tools give a note, not an error.
    """
    target = ptx_header(ptx)["target"]
    source = scratch / f"{stem}.ptx"
    source.write_text(ptx, encoding="utf-8")
    cubin = scratch / f"{stem}.cubin"
    failures = []
    for ptxas in tool_candidates("ptxas", nvcc):
        run = subprocess.run([str(ptxas), "-v", f"-arch={target}", source.name, "-o", cubin.name], cwd=scratch, capture_output=True, text=True, timeout=600)
        if run.returncode == 0:
            break
        failures.append(f"{ptxas.name} {tool_version(ptxas)}: {_first_error(run.stderr + run.stdout)}")
    else:
        note = "; ".join(failures) if failures else "no ptxas found (Triton's wheel ships one under triton/backends/nvidia/bin)"
        return {}, f"ptxas could not assemble it ({note})", "", "skipped: no cubin"
    resources = parse_ptxas_log(run.stderr + run.stdout)
    note = f"`ptxas -v -arch={target}` (ptxas {tool_version(ptxas)})"
    for tool, args in (("nvdisasm", ["-c"]), ("cuobjdump", ["-sass"])):
        for path in tool_candidates(tool, nvcc):
            disasm = subprocess.run([str(path), *args, cubin.name], cwd=scratch, capture_output=True, text=True, timeout=600)
            if disasm.returncode == 0 and disasm.stdout.strip():
                return resources, note, disasm.stdout, ""
    return resources, note, "", "skipped: neither nvdisasm nor cuobjdump is installed (Triton's wheel ships both)"


def compile_twin_ptx(cu: Path, arch: Arch, nvcc: Path, label: str | None = None) -> str:
    """`nvcc -ptx -arch=<arch>` of a twin .cu file (run in its directory, so no absolute path reaches the PTX)."""
    with tempfile.TemporaryDirectory(prefix="harvest-ptx-") as scratch:
        out = Path(scratch) / (cu.stem + ".ptx")
        run = subprocess.run(
            [str(nvcc), "-ptx", f"-arch={arch.name}", cu.name, "-o", str(out)], cwd=cu.parent, capture_output=True, text=True, timeout=600
        )
        if run.returncode != 0:
            detail = _first_error(run.stderr + run.stdout).replace(str(cu.parent) + os.sep, "")
            raise ToolchainError(f"nvcc could not compile {label or cu} for {arch.name}: {detail}")
        return out.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ Triton (a child process)


@dataclass(frozen=True)
class TritonPtx:
    ptx: str
    triton_version: str


def _job(module: KernelModule, arch: Arch, torch_version: str | None = None) -> dict[str, Any]:
    args = compile_args(module)
    return {
        "torch_version": torch_version,
        "label": module.label,
        "name": module.name,
        "source": module.padded_source,
        "signature": args.signature,
        "constexprs": args.constexprs,
        "attrs": [[index, value] for index, value in sorted(args.attrs.items())],
        "options": args.options,
        "capability": arch.capability,
        "references": [list(chain) for chain in module.references],
    }


def compile_triton_ptx(
    modules: list[KernelModule], arch: Arch, torch_version: str | None = None
) -> Iterator[TritonPtx | HarvestError]:
    """Each module's PTX from `triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32))`, in order.

    One child process for all of them (Triton is imported once), run without TRITON_INTERPRET and with a fresh Triton
    cache; yields a result or the error for each module as it is done. A kernel's `triton_helpers` are what the
    extraction's harness.py holds: harvest's own, in the forms of `torch_version`, the torch the extraction was
    captured with (None: the current forms); torch's only where the kernel calls one harvest has no version of (its
    module then imports torch's too).
    """
    jobs = [_job(m, arch, torch_version) for m in modules]
    if not jobs:
        return
    root = str(Path(__file__).resolve().parents[2])  # the directory that holds harvest/, for the child
    with tempfile.TemporaryDirectory(prefix="harvest-ptx-") as scratch:
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        env["TRITON_CACHE_DIR"] = str(Path(scratch) / "cache")
        env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Inductor compiles with FP fusion on; says so, silences 3.9's warning
        stderr_path = Path(scratch) / "stderr"
        with open(stderr_path, "w") as stderr, subprocess.Popen(
            [sys.executable, "-m", "harvest.ptx"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, text=True, cwd=scratch
        ) as child:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(json.dumps(jobs))
            child.stdin.close()
            done = 0
            for line in child.stdout:
                if not line.startswith(CHILD_PREFIX):
                    continue
                reply = json.loads(line[len(CHILD_PREFIX) :])
                done += 1
                if "ptx" in reply:
                    yield TritonPtx(portable_file_paths(reply["ptx"]), reply["triton_version"])
                elif reply.get("kind") == "refused":
                    yield ParseError(reply["error"])
                else:
                    yield ToolchainError(reply["error"])
            child.wait()
        if done < len(jobs):
            detail = _first_error(stderr_path.read_text(encoding="utf-8", errors="replace"))
            for _ in range(len(jobs) - done):
                yield ToolchainError(f"the Triton compile process stopped (exit {child.returncode}): {detail}")


def _compile_error_line(exc: BaseException) -> str:
    """Triton's CompilationError spans lines (location, source, caret, cause): keep the location and the cause."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    if len(lines) > 1 and lines[0].startswith("at "):
        return f"{lines[-1]} ({lines[0].rstrip(':')})"
    return lines[0] if type(exc).__name__ in lines[0] else f"{type(exc).__name__}: {lines[0]}"


def _child_namespace(references: list[list[str]], torch_version: str | None = None) -> dict[str, Any]:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    namespace: dict[str, Any] = {"__name__": "harvest_ptx_kernel", "__builtins__": {}, "triton": triton, "tl": tl, "libdevice": libdevice}
    if any(chain[0] == "triton_helpers" for chain in references):
        from harvest.helper_blocks import known_helpers
        from harvest.inductor_helpers import for_torch

        called = {chain[1] for chain in references if chain[0] == "triton_helpers" and len(chain) > 1}
        if called <= known_helpers():  # the harness's piece, built from harvest's own text (.file "harness.py")
            namespace["triton_helpers"] = for_torch(torch_version, sorted(called))
        else:  # as module_plan decided: the module imports torch's
            from torch._inductor.runtime import triton_helpers

            namespace["triton_helpers"] = triton_helpers
    if any(chain[0] == "tl_math" for chain in references):
        namespace["tl_math"] = tl.math  # what torch's triton_helpers.math is on every triton harvest compiles with
    return namespace


def _check_references(references: list[list[str]], namespace: dict[str, Any], label: str) -> None:
    """Every dotted name the body reads off a module must end at a Triton function, dtype, constant or module."""
    import triton.language as tl
    from triton.runtime import jit

    callables = tuple(c for c in (getattr(jit, "JITCallable", None), jit.JITFunction) if c is not None)
    helpers = namespace.get("triton_helpers")

    def triton_module(value: Any) -> bool:
        name = getattr(value, "__name__", "") if type(value).__name__ == "module" else None
        return name is not None and (name.startswith("triton.language") or value is helpers)

    def device_side(value: Any) -> bool:
        return (
            triton_module(value)
            or isinstance(value, (tl.dtype, tl.constexpr) + callables)
            or getattr(value, "__triton_builtin__", False)
            or str(getattr(value, "__module__", "")).startswith("triton.language")
        )

    for chain in references:
        value = namespace.get(chain[0])
        for depth, attr in enumerate(chain[1:], start=1):
            if not (triton_module(value) or (depth == 1 and chain[0] == "triton" and attr == "language")):
                raise PermissionError(f"{label}: refusing to compile the kernel body: {'.'.join(chain)} reaches outside Triton's language ({'.'.join(chain[:depth])} is not a Triton module)")
            value = getattr(value, attr, None)
            if value is None:
                break  # not there: Triton's own error says so
        if value is not None and len(chain) > 1 and not device_side(value):
            raise PermissionError(f"{label}: refusing to compile the kernel body: {'.'.join(chain)} is not a Triton function, dtype or constant")


def _child_compile(job: dict[str, Any]) -> dict[str, Any]:
    import linecache

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    label = job["label"]
    major, minor = (int(part) for part in re.findall(r"\d+", triton.__version__)[:2])
    if (major, minor) < (3, 3):  # ASTSource took an AttrsDescriptor and integer-keyed constants before 3.3
        raise ToolchainError(f"harvest ptx needs triton >= 3.3 to compile offline; this Python has triton {triton.__version__}")
    check_kernel_region(job["source"].lstrip("\n"), label)  # the parent checked it; so does the process that runs it
    namespace = _child_namespace(job["references"], job.get("torch_version"))
    try:
        _check_references(job["references"], namespace, label)
    except PermissionError as exc:
        return {"error": str(exc), "kind": "refused"}
    source = job["source"]
    linecache.cache[label] = (len(source), None, source.splitlines(True), label)  # JITFunction reads its source here
    exec(compile(source, label, "exec"), namespace)  # only the checked def: decorator triton.jit, tl.constexpr annotations
    fn = namespace[job["name"]]
    attrs = {(index,): value for index, value in job["attrs"]}
    source_ast = ASTSource(fn, job["signature"], {(fn.arg_names.index(k),): v for k, v in job["constexprs"].items()}, attrs)
    compiled = triton.compile(source_ast, target=GPUTarget("cuda", job["capability"], 32), options=job["options"])
    return {"ptx": compiled.asm["ptx"], "triton_version": triton.__version__}


def child_main() -> int:
    """The child side of compile_triton_ptx: JSON jobs on stdin, one result line per job on stdout."""
    jobs = json.load(sys.stdin)
    for job in jobs:
        try:
            reply = _child_compile(job)
        except ParseError as exc:
            reply = {"error": str(exc), "kind": "refused"}
        except HarvestError as exc:
            reply = {"error": str(exc)}
        except Exception as exc:  # Triton's compile errors: reported per kernel, the others still compile
            reply = {"error": f"Triton could not compile {job['label']} for sm_{job['capability']}: {_compile_error_line(exc)}"}
        sys.stdout.write(CHILD_PREFIX + json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0
