"""The twin's one refusal: a kernel outside what it translates; and the kinds of kernel it never translates, and why
(`harvest twin` records the reason, `harvest ptx` says it beside a kernel without a twin)."""


class NoTwin(Exception):
    """This kernel is outside what the CUDA twin translates; the message says why."""


# Kinds whose kernels get no CUDA twin, and why: a template's counterpart is the library's (cuBLAS, cuDNN: its eager reference).
NO_TWIN_KINDS = {
    "template": "template (its CUDA counterpart is the library's, cuBLAS or cuDNN: `--bench` times it against the eager reference, torch.mm and the fused ops)",
}
