"""Which Name nodes are the kernel's own variables: one walk of the module, in place of libcst's ScopeProvider.

A kernel module is flat: module-level imports and helper functions, then the kernel, whose body has no nested
functions or classes and at most a lambda or a comprehension. For that shape one walk can say everything renaming
needs, at about a fifth of the cost of resolving libcst's scope and parent metadata (which was the largest item of
an extraction's profile):

- the kernel's assignments (its Param nodes and the Name nodes it binds) and reads, by name;
- the reads of nested scopes (lambdas, comprehensions) inside the kernel that see a kernel variable;
- every name read anywhere in the module (a new name must not capture one);
- each node's parent, so a Name can be walked up to its statement.

The rules follow ScopeProvider's where a kernel can meet them: `x += 1` binds x (it is not also a read), a
comprehension's first iterable is read in the enclosing scope, a parameter's annotation and default are read in the
enclosing scope. `global` and `nonlocal` are refused (ValueError): Inductor never writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from harvest.syntax import QuickVisitor, visitor_method

_NESTED = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass
class _Scope:
    parent: _Scope | None
    assignments: dict[str, list[cst.CSTNode]] = field(default_factory=dict)
    accesses: dict[str, list[cst.Name]] = field(default_factory=dict)


@dataclass
class KernelScope:
    """The kernel function's bindings and reads (nested scopes' reads of kernel variables included), every name read
    in the module, and each node's parent."""

    assignments: dict[str, list[cst.CSTNode]]
    accesses: dict[str, list[cst.Name]]
    inner_accesses: dict[str, list[cst.Name]]  # reads in a lambda or comprehension that see the kernel's variable
    module_reads: set[str]
    parents: dict[cst.CSTNode, cst.CSTNode]


class _Walk(QuickVisitor):
    def __init__(self, kernel: cst.FunctionDef, also: cst.CSTVisitor | None = None) -> None:
        self.kernel = kernel
        self.also = also  # a visitor whose visit_<Node> methods see the kernel's nodes in this same walk
        self.module_scope = _Scope(None)
        self.scope = self.module_scope
        self.kernel_scope: _Scope | None = None
        self.nested: list[_Scope] = []  # lambdas and comprehensions
        self.functions: list[_Scope] = []  # module-level functions (the kernel, Inductor's helpers)
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.stack: list[cst.CSTNode] = []
        self.stores: set[int] = set()  # ids of target nodes: Names among them are bound, not read
        self.skip: set[int] = set()  # ids of Names that are no variable (attribute names, keywords, imported names)
        self.outer: dict[int, _Scope] = {}  # ids of subtrees read in the scope enclosing the node that holds them
        self.entered: dict[int, _Scope] = {}  # ids of nodes that open a scope -> the scope to restore on leaving

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.parents[node] = self.stack[-1]
        self.stack.append(node)
        if id(node) in self.outer:
            self.entered[id(node)] = self.scope
            self.scope = self.outer[id(node)]
        kind = type(node)  # libcst's node classes are final: an exact type is the isinstance answer, and cheaper
        if self.also is not None and self.kernel_scope is not None:
            method = visitor_method(self.also, "visit_", kind)
            if method is not None and self._in_kernel():
                method(node)
        if kind is cst.Name:
            self._name(node)  # type: ignore[arg-type]
        else:
            handler = _HANDLERS.get(kind)
            if handler is not None:
                handler(self, node)
        return True

    def _stored_elements(self, node: cst.Tuple | cst.List) -> None:
        if id(node) in self.stores:
            self.stores.update(id(e.value) for e in node.elements)

    def _stored_starred(self, node: cst.StarredElement) -> None:
        if id(node) in self.stores:
            self.stores.add(id(node.value))

    def _assign_target(self, node: cst.AssignTarget) -> None:
        self.stores.add(id(node.target))

    def _binds_target(self, node: cst.AugAssign | cst.AnnAssign | cst.For | cst.CompFor | cst.NamedExpr) -> None:
        self.stores.add(id(node.target))

    def _as_name(self, node: cst.AsName) -> None:
        self.stores.add(id(node.name))

    def _attribute(self, node: cst.Attribute) -> None:
        self.skip.add(id(node.attr))

    def _arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def _param(self, node: cst.Param) -> None:
        self._bind(node.name.value, node)
        self.skip.add(id(node.name))
        for part in (node.annotation, node.default):
            if part is not None:
                self.outer[id(part)] = self.scope.parent or self.scope

    def _refuse(self, node: cst.Global | cst.Nonlocal) -> None:
        raise ValueError("the kernel module uses global or nonlocal")

    def _in_kernel(self) -> bool:
        scope: _Scope | None = self.scope
        while scope is not None and scope is not self.kernel_scope:
            scope = scope.parent
        return scope is not None

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()
        restore = self.entered.pop(id(original_node), None)
        if restore is not None:
            self.scope = restore

    def _name(self, node: cst.Name) -> None:
        if id(node) in self.skip:
            return
        if id(node) in self.stores:
            self._bind(node.value, node)
        else:
            self.scope.accesses.setdefault(node.value, []).append(node)

    def _bind(self, name: str, node: cst.CSTNode) -> None:
        self.scope.assignments.setdefault(name, []).append(node)

    def _imports(self, node: cst.Import | cst.ImportFrom) -> None:
        names = node.names if not isinstance(node.names, cst.ImportStar) else ()
        for alias in names:
            self._skip_names(alias.name)
            bound = alias.asname.name if alias.asname else alias.name
            if isinstance(bound, cst.Name):
                self._bind(bound.value, bound)
                self.skip.add(id(bound))
        if isinstance(node, cst.ImportFrom) and node.module is not None:
            self._skip_names(node.module)

    def _skip_names(self, expr: cst.BaseExpression) -> None:
        while isinstance(expr, cst.Attribute):
            self.skip.add(id(expr.attr))
            expr = expr.value
        if isinstance(expr, cst.Name):
            self.skip.add(id(expr))

    def _open_function(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        self._bind(node.name.value, node.name)
        self.skip.add(id(node.name))
        if self.scope is not self.module_scope:
            raise ValueError("a function or class defined inside a function")
        inner = _Scope(self.scope)
        self.functions.append(inner)
        if node is self.kernel:
            self.kernel_scope = inner
        for decorator in node.decorators:
            self.outer[id(decorator)] = self.scope
        if isinstance(node, cst.ClassDef):
            for arg in node.bases + node.keywords:
                self.outer[id(arg)] = self.scope
        self.entered.setdefault(id(node), self.scope)  # kept if the node is also read in an outer scope
        self.scope = inner

    def _open_nested(self, node: cst.CSTNode) -> None:
        inner = _Scope(self.scope)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            self.outer[id(node.for_in.iter)] = self.scope  # the first iterable is read outside the comprehension
        self.nested.append(inner)
        self.entered.setdefault(id(node), self.scope)
        self.scope = inner


def kernel_scope(module: cst.Module, kernel: cst.FunctionDef, also: cst.CSTVisitor | None = None) -> KernelScope:
    """One walk of `module` (which holds `kernel` as a module-level def). `also`'s visit_<Node> methods are called on
    the nodes inside the kernel's body and parameters, in the same walk (its return values are ignored: it sees
    every node)."""
    walk = _Walk(kernel, also)
    module.visit(walk)
    scope = walk.kernel_scope
    if scope is None:
        raise ValueError("the kernel is not a module-level function")
    inner: dict[str, list[cst.Name]] = {}
    for nested in walk.nested:
        for name, nodes in nested.accesses.items():
            owner = nested
            while owner is not scope and owner is not None and name not in owner.assignments:
                owner = owner.parent
            if owner is scope:
                inner.setdefault(name, []).extend(nodes)
    reads = {name for s in [walk.module_scope, *walk.functions, *walk.nested] for name in s.accesses}
    return KernelScope(scope.assignments, scope.accesses, inner, reads, walk.parents)


# What the walk does on entering a node, by the node's class (cst.Name is handled first, inline).
_HANDLERS = {
    cst.Tuple: _Walk._stored_elements,
    cst.List: _Walk._stored_elements,
    cst.StarredElement: _Walk._stored_starred,
    cst.AssignTarget: _Walk._assign_target,
    **{kind: _Walk._binds_target for kind in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)},
    cst.AsName: _Walk._as_name,
    cst.Attribute: _Walk._attribute,
    cst.Arg: _Walk._arg,
    cst.Import: _Walk._imports,
    cst.ImportFrom: _Walk._imports,
    cst.Param: _Walk._param,
    cst.FunctionDef: _Walk._open_function,
    cst.ClassDef: _Walk._open_function,
    **{kind: _Walk._open_nested for kind in _NESTED},
    cst.Global: _Walk._refuse,
    cst.Nonlocal: _Walk._refuse,
}
