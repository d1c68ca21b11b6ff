"""Eager PyTorch reference for one Triton kernel, built from its own `# Graph fragment:` comment.

`build_reference(kernel, launch, graph)` returns the source of `def reference(in_ptr0, ...) -> dict[str, Tensor]`
that recomputes the kernel's stored outputs with `torch.ops.aten.*`, so `--check` compares the kernel against
something that does not trust the kernel.

The hard part is binding fragment names to kernel parameters:

* inputs: a parameter the kernel reads (`tl.load(in_ptrK ...)` before any store to it) is bound to a fragment
  placeholder by name (the launch passes `primals_3` and the fragment reads `%primals_3`), else by tensor meta
  (the launch passes `buf5`, an allocation whose shape/stride/dtype is that of `%addmm`), else by order when the
  remaining parameters and placeholders agree pairwise (Inductor numbers `in_ptrK` in read order).
* outputs: the value a parameter finally holds (its last `tl.store`) is matched to a fragment node by the bound
  buffer's meta, narrowed by the stored expression's outermost operation (`libdevice.rsqrt` -> aten.rsqrt,
  `sum(..) / n` -> a mean), preferring nodes named in `return`.

Whatever cannot be bound without guessing is reported in `unchecked` with a reason; this module never raises.
"""

from harvest.reference.build import Reference, build_reference, kernel_outputs, reference_json

__all__ = ["Reference", "build_reference", "kernel_outputs", "reference_json"]
