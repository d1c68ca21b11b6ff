"""What a long command says while it runs.

The stages report through one callable, `on_progress(event)`, where an event is a message (a line to show) or,
where on_progress takes them (`counter`), a Count (n of total items of a piece of work done: kernels rendered, benched, twins compiled). The CLI turns them
into what fits where its output goes:

  a terminal    the messages as lines, and under them one live line: a bar for counted work, else a spinner with
                the latest message and the time since the command started (rich)
  a pipe, a log the messages as lines, and each counted piece of work once when it starts and once when it is done
  -q            nothing

    with ProgressDisplay(console, "harvest", quiet=False) as progress:
        extract(..., on_progress=progress)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from harvest.text_output import clipped


@dataclass(frozen=True)
class Count:
    """done of total items of one piece of work (what: "rendering kernel modules")."""

    what: str
    done: int
    total: int


ProgressEvent = str | Count
OnProgress = Callable[[str], None]  # a stage's on_progress: messages; Counts too where it takes them (counter)


def counter(on_progress: Callable) -> Callable[[str, int, int], None]:
    """count(what, done, total) for a stage: it reaches on_progress as a Count where on_progress takes them (its
    `counts` is true: ProgressDisplay), and nowhere else, so a caller of the Python API that passed `print` gets
    messages only."""
    if not getattr(on_progress, "counts", False):
        return lambda what, done, total: None
    return lambda what, done, total: on_progress(Count(what, done, total))


class ProgressDisplay:
    """on_progress for the CLI (see the module's docstring); a context manager, so the live line goes away at the end."""

    counts = True  # it takes Count events (see counter)

    def __init__(self, console, label: str, quiet: bool = False) -> None:
        self.console, self.label, self.quiet = console, label, quiet
        self.live = None
        self.task = None
        self.counting: str | None = None
        self.started = time.monotonic()

    @classmethod
    def on_stderr(cls, label: str, quiet: bool = False) -> ProgressDisplay:
        """The display a command shows on stderr (its `console`, for the notes after it), so that stdout holds only
        what the command prints as its result."""
        from rich.console import Console

        return cls(Console(stderr=True, highlight=False, soft_wrap=True), label, quiet)

    def __enter__(self) -> ProgressDisplay:
        if not self.quiet and self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self.live = Progress(SpinnerColumn(), TextColumn("[bold cyan]{task.fields[label]}[/] {task.description}"),
                                 BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=self.console, transient=True)
            self.live.start()
            self.task = self.live.add_task("starting", total=None, label=self.label)
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def __call__(self, event: ProgressEvent) -> None:
        if self.quiet:
            return
        if isinstance(event, Count):
            self.count(event)
            return
        self.console.print(f"[bold cyan]{self.label}[/] {event}", highlight=False)
        if self.live is not None:
            self.live.update(self.task, description=clipped(event, 70), total=None, completed=0)

    def count(self, event: Count) -> None:
        if self.live is not None:
            self.live.update(self.task, description=event.what, total=event.total, completed=event.done)
            return
        if event.done == 0 or (self.counting != event.what and event.done < event.total):
            self.console.print(f"[bold cyan]{self.label}[/] {event.what}: {event.total} to do", highlight=False)
            self.counting = event.what
        elif event.done >= event.total:
            self.console.print(f"[bold cyan]{self.label}[/] {event.what}: {event.done} of {event.total} done "
                               f"({time.monotonic() - self.started:.0f} s since the start)", highlight=False)
            self.counting = None
