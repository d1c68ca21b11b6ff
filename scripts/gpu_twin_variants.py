"""On the GPU: why the square twin lost 7 % of bandwidth when its size became a run-time parameter (issue 9 follow-up).

Builds variants of one generated pointwise twin (square_compile's square_kernel.cu) with load_inline, launches each
the way the twin module does, and times them against a device copy in the same process:
    python3 scripts/gpu_twin_variants.py EXTRACTION_DIR      # after harvest extract + harvest twin on square_compile
"""

import re
import sys
from pathlib import Path

import torch
import triton.testing
from torch.utils.cpp_extension import load_inline

extraction = Path(sys.argv[1])
twin_dir = next(extraction.glob("*/twin"))
cu = (twin_dir / "square_kernel.cu").read_text()
launcher = re.search(r'LAUNCHER = r"""(.*?)"""', (twin_dir / "square_kernel_twin.py").read_text(), re.S).group(1)

loop = re.search(r"for \(int64_t hv_base = (.*?); hv_base < hv_numel; hv_base \+= .*?\) \{", cu)
fast = "if (hv_aligned && hv_base + 4 <= hv_numel) {"
assert loop and fast in cu
variants = {
    "as generated (run-time size)": cu,
    "size a constant (session 3)": cu.replace("int32_t n_elements) {", "int32_t n_elements_param) {\n    const int32_t n_elements = 100000000;"),
    "fast path __builtin_expect": cu.replace(fast, "if (__builtin_expect(hv_aligned && hv_base + 4 <= hv_numel, 1)) {"),
    "one chunk per thread (no grid-stride loop)": cu.replace(loop.group(0), f"{{ const int64_t hv_base = {loop.group(1)}; if (hv_base < hv_numel) {{") + "}",
    "32-bit index": cu.replace(loop.group(0), loop.group(0).replace("int64_t hv_base", "int32_t hv_base").replace("static_cast<int64_t>(blockIdx.x)", "static_cast<int32_t>(blockIdx.x)")),
}
n = 10000 * 10000
src = torch.randn(n, device="cuda")
dst = torch.empty_like(src)
gb = 2 * n * 4 / 1e9
copy = triton.testing.do_bench(lambda: dst.copy_(src), quantiles=[0.5, 0.2, 0.8])
print(f"copy  {copy[0]:.4f} ms ({copy[1]:.4f}..{copy[2]:.4f})  {gb / copy[0] * 1e3:.0f} GB/s")
for index, (name, source) in enumerate(variants.items()):
    build = Path("/tmp") / f"variant_{index}"
    build.mkdir(exist_ok=True)
    module = load_inline(f"square_variant_{index}", cpp_sources="void launch(torch::Tensor a_ptr, torch::Tensor out_ptr, int64_t n_elements);",
                         cuda_sources=source + launcher, functions=["launch"], extra_cuda_cflags=["-O3"], build_directory=str(build))
    launch = module.launch
    launch(src, dst, n)
    torch.cuda.synchronize()
    ok = torch.equal(dst, src * src)
    ms = triton.testing.do_bench(lambda launch=launch: launch(src, dst, n), quantiles=[0.5, 0.2, 0.8])
    print(f"{name:45s} {ms[0]:.4f} ms ({ms[1]:.4f}..{ms[2]:.4f})  {gb / ms[0] * 1e3:.0f} GB/s = {copy[0] / ms[0] * 100:.1f}% of copy  correct={ok}", flush=True)
