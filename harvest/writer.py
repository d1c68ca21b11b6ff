"""The only module that writes extraction output to disk.

Rules: raw captures are written first and always; a generated file is replaced only if it is unchanged since harvest
wrote it (its sha256 is the one the previous manifest recorded) or `force` is set, in which case the edited file is
kept next to it as a numbered backup. Files a previous extraction wrote that the new one does not are removed when
unedited, so an extraction directory always equals a fresh extraction.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harvest.errors import OutputError


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    kept_edited: list[str] = field(default_factory=list)  # hand-edited files left alone
    backups: list[str] = field(default_factory=list)  # (with force) where edited files were saved
    removed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # relative path -> why it could not be written (disk full)


def inside(relative: str) -> bool:
    """A relative path that stays under the directory it is joined to (no absolute path, no `..`)."""
    path = Path(relative)
    return bool(relative) and not path.is_absolute() and ".." not in path.parts


def ensure_writable(out_dir: Path) -> None:
    """Create out_dir or fail with one clear line."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".harvest-write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise OutputError(f"cannot write to output directory {out_dir}: {exc.strerror or exc}; pick another with -o/--out") from exc


def write_raw(out_dir: Path, graphs: dict[str, str], record: dict, under: str = "raw") -> list[str]:
    """Write raw/<graph>/output_code.py for every captured graph, then raw/capture.json (last: once it is there, the
    raw capture is whole and replays); returns the relative paths. `under`: "" writes into out_dir itself (a rank's
    raw/rank<r>/)."""
    raw = out_dir / under if under else out_dir
    paths = []
    for name, source in graphs.items():
        path = raw / name / "output_code.py"
        write_file(path, source)
        paths.append(path.relative_to(out_dir).as_posix())
    write_file(raw / "capture.json", json.dumps(record, indent=1, sort_keys=True) + "\n")
    return [(raw / "capture.json").relative_to(out_dir).as_posix(), *paths]


def previous_hashes(out_dir: Path) -> dict[str, str]:
    """relative path -> sha256 of every generated file the previous manifest recorded."""
    manifest = out_dir / "manifest.json"
    if not manifest.exists():
        return {}
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except ValueError:
        return {}
    recorded = data.get("generated_files") if isinstance(data, dict) else None  # someone else's manifest.json
    if not isinstance(recorded, dict):
        return {}
    # Only paths inside out_dir: a foreign or hand-edited manifest must never make harvest touch files elsewhere.
    return {path: digest for path, digest in recorded.items() if isinstance(path, str) and isinstance(digest, str) and inside(path)}


def _backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".bak")
    number = 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.bak{number}")
    return candidate


def write_generated(out_dir: Path, files: dict[str, str], *, force: bool, keep: set[str] = frozenset()) -> WriteReport:
    """Write generated files (relative path -> text) under the no-clobber rule; `keep` are paths never removed."""
    report = WriteReport()
    before = previous_hashes(out_dir)
    for relative, text in sorted(files.items()):
        if not inside(relative):  # names come from manifests and captures, which a user can edit
            raise OutputError(f"refusing to write {relative!r}: it points outside {out_dir}; re-run `harvest extract` to rewrite the manifest")
        path = out_dir / relative
        if path.exists():
            current = sha256(path.read_text(encoding="utf-8", errors="replace"))
            if current == sha256(text):
                continue
            edited = before.get(relative) != current
            if edited and not force:
                report.kept_edited.append(relative)
                continue
            if edited:
                backup = _backup_path(path)
                shutil.copy2(path, backup)
                report.backups.append(backup.relative_to(out_dir).as_posix())
        tmp = path.with_name(path.name + ".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:  # disk full, quota: a half-written file never replaces a whole one
            tmp.unlink(missing_ok=True)
            report.failed[relative] = exc.strerror or str(exc)
            continue
        report.written.append(relative)
    for relative, recorded in sorted(before.items()):
        path = out_dir / relative
        if relative in files or relative in keep or not path.exists():
            continue
        if sha256(path.read_text(encoding="utf-8", errors="replace")) == recorded:
            path.unlink()
            report.removed.append(relative)
            _remove_empty_parents(path.parent, out_dir)
        else:
            report.kept_edited.append(relative)
    return report


def remove_stale_raw(out_dir: Path, graph_names: set[str]) -> None:
    raw = out_dir / "raw"
    if not raw.is_dir():
        return
    for child in raw.iterdir():
        rank_dir = re.fullmatch(r"rank\d+", child.name) and (child / "capture.json").exists()  # an older torchrun job's
        if child.is_dir() and child.name not in graph_names and ((child / "output_code.py").exists() or rank_dir):
            shutil.rmtree(child)


def _remove_empty_parents(directory: Path, stop: Path) -> None:
    while directory != stop and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


STAGING = ".records-staging"  # under raw/: where the capture child writes launch data while the target runs


def fresh_staging(out_dir: Path) -> Path:
    """An empty raw/.records-staging/ for the capture child (left over from a killed run: emptied).

    Absolute: the child writes there while the target runs, and a target may change its working directory."""
    staging = out_dir.resolve() / "raw" / STAGING
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def place_records(out_dir: Path, staging: Path, graphs: list[tuple[str, str]]) -> None:
    """Move the launch data the child wrote by graph index (rank<r>/<index> in a torchrun job) to
    raw/<graph>/records/ (raw/rank<r>/<graph>/records/), replacing older records."""
    for index, name in graphs:
        target = out_dir / "raw" / name / "records"
        shutil.rmtree(target, ignore_errors=True)
        source = staging / index
        if source.is_dir():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
    shutil.rmtree(staging, ignore_errors=True)


def copy_tree(source: Path, target: Path) -> None:
    """A replay into another directory takes a torchrun job's rank directory along, whole (an older one there goes)."""
    shutil.rmtree(target, ignore_errors=True)
    if source.is_dir():
        shutil.copytree(source, target)


def copy_records(source_raw: Path, out_raw: Path, graphs: list[str]) -> None:
    """A replay into another directory takes the recorded launch data along."""
    for name in graphs:
        target = out_raw / name / "records"
        shutil.rmtree(target, ignore_errors=True)
        if (source_raw / name / "records").is_dir():
            shutil.copytree(source_raw / name / "records", target)


def write_file(path: Path, content: str | bytes) -> None:
    """Write one file whole or not at all (through a temporary file beside it), creating its directory: every file
    of an extraction (raw/ included; what the later commands ptx, bench, run and report add to it) and what `harvest
    pack` writes goes through here. Text is written as UTF-8."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    write_through(path, lambda tmp: tmp.write_bytes(data))


def write_through(path: Path, write: Callable[[Path], object]) -> None:
    """Whole or not at all, for a writer that takes a path (`torch.save` of a record): `write` writes a temporary
    file beside `path`, which then replaces `path`; on any failure the temporary file is removed and `path` is as it
    was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_manifest(out_dir: Path, manifest: dict) -> None:
    """Whole or not at all: a failed write (disk full) leaves the previous manifest.json as it was."""
    path = out_dir / "manifest.json"
    try:
        write_file(path, json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}; free some space and re-run `harvest extract {out_dir}` (raw/ is kept)") from exc
