"""Progress of long work: lines in a pipe, a live bar on a terminal, nothing with -q; counts reach only those that
take them."""

from __future__ import annotations

import io

from conftest import EXAMPLES, harvest
from rich.console import Console

from harvest.progress import Count, ProgressDisplay, counter


def console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=120, highlight=False), out


def test_in_a_pipe_messages_are_lines_and_counted_work_is_said_when_it_starts_and_ends():
    shown, out = console(terminal=False)
    with ProgressDisplay(shown, "harvest") as progress:
        progress("running the target")
        for done in range(4):
            progress(Count("rendering kernel modules", done, 3))
    lines = out.getvalue().splitlines()
    assert lines[0] == "harvest running the target"
    assert lines[1] == "harvest rendering kernel modules: 3 to do"
    assert lines[2].startswith("harvest rendering kernel modules: 3 of 3 done (")
    assert len(lines) == 3


def test_on_a_terminal_a_live_line_shows_the_count_and_goes_away():
    shown, out = console(terminal=True)
    with ProgressDisplay(shown, "harvest") as progress:
        progress("running the target")
        progress(Count("benching kernels", 1, 2))
        progress(Count("benching kernels", 2, 2))
    text = out.getvalue()
    assert "running the target" in text
    assert "\x1b[" in text  # the live line is drawn with terminal control sequences, then cleared


def test_quiet_says_nothing():
    shown, out = console(terminal=True)
    with ProgressDisplay(shown, "harvest", quiet=True) as progress:
        progress("running the target")
        progress(Count("rendering kernel modules", 1, 1))
    assert out.getvalue() == ""


def test_a_plain_callable_gets_messages_and_never_a_count():
    seen = []
    count = counter(seen.append)
    count("rendering kernel modules", 1, 2)
    assert seen == []
    shown, _ = console(terminal=False)
    display = ProgressDisplay(shown, "harvest")
    received = []
    display.count = received.append  # what the display is handed
    counter(display)("rendering kernel modules", 1, 2)
    assert received == [Count("rendering kernel modules", 1, 2)]


def test_extract_in_a_pipe_says_how_many_modules_it_renders(tmp_path):
    done = harvest("extract", str(EXAMPLES / "square_square.py"), "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "harvest rendering kernel modules: 1 to do" in done.stderr
    assert "harvest rendering kernel modules: 1 of 1 done" in done.stderr
    quiet = harvest("extract", str(EXAMPLES / "square_square.py"), "-o", "out2", "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and "rendering" not in quiet.stderr
