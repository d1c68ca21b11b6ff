"""Templates shipped with harvest: one loader for the kernel modules and the report.

Installed, they live in the package `harvest.templates` (pyproject maps the top-level templates/ directory to it);
run from a source tree (`PYTHONPATH=. python -m harvest`), the same files are read from templates/ beside harvest/,
even where an editable install of another checkout maps `harvest.templates` to that checkout's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

import jinja2

from harvest.errors import HarvestError

TEMPLATE_PACKAGE = "harvest.templates"


class TemplateNotFound(HarvestError):
    """A template name harvest does not ship."""


def template_dir() -> Traversable:
    """The templates of the harvest that is running: a checkout's own templates/ when harvest runs from one (on
    PYTHONPATH or installed editable), never another checkout's that an editable install elsewhere maps."""
    here = Path(__file__).resolve().parent
    source_tree = here.parent / "templates"
    if (here.parent / "pyproject.toml").is_file() and source_tree.is_dir():
        return source_tree
    try:
        return resources.files(TEMPLATE_PACKAGE)
    except ModuleNotFoundError:  # a source tree without its pyproject.toml
        return source_tree


def available_templates() -> list[str]:
    return sorted(p.name for p in template_dir().iterdir() if p.name.endswith(".j2"))


def load_template(name: str, filters: dict[str, Callable] | None = None) -> jinja2.Template:
    """A shipped template; an unknown name raises an error that lists the ones that exist. Without filters, each
    template is compiled once per process (every module of an extraction renders the same one)."""
    if not filters:
        return _compiled_template(name)
    return _compile_template(name, filters)


@functools.cache
def _compiled_template(name: str) -> jinja2.Template:
    return _compile_template(name, None)


def _compile_template(name: str, filters: dict[str, Callable] | None) -> jinja2.Template:
    resource = template_dir() / name
    if not resource.is_file():
        raise TemplateNotFound(f"no template {name!r} in {TEMPLATE_PACKAGE}; available: {', '.join(available_templates())}")
    environment = jinja2.Environment(
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined, autoescape=False
    )
    environment.filters.update(filters or {})
    return environment.from_string(resource.read_text(encoding="utf-8"))
