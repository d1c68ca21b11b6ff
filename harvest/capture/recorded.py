"""Recorded launches between their two text forms and the model: the child's `launch` events, and raw/capture.json.

Pure: dicts in, `RecordedLaunch` out, and back. raw/capture.json keeps exactly what the events said, so a replay of
an extraction builds the same modules as the run did.
"""

from __future__ import annotations

from typing import Any

from harvest.model import AutotuneWinner, RecordedArg, RecordedLaunch, RecordedStorage, RecordedView


def launch_from_json(entry: dict[str, Any]) -> RecordedLaunch:
    args = []
    for arg in entry["args"]:
        tensor = arg.get("tensor")
        view = None
        if tensor is not None:
            view = RecordedView(
                storage=int(tensor["storage"]),
                shape=tuple(int(s) for s in tensor["shape"]),
                stride=tuple(int(s) for s in tensor["stride"]),
                offset=int(tensor["offset"]),
                dtype=str(tensor["dtype"]),
            )
        args.append(RecordedArg(param=arg["param"], view=view, value=None if tensor is not None else arg.get("value")))
    storages = tuple(
        RecordedStorage(lo=int(s["lo"]), hi=int(s["hi"]), device=str(s["device"]), written=s.get("written"))
        for s in entry["storages"]
    )
    grid = entry.get("grid")
    return RecordedLaunch(
        kernel=entry["kernel"],
        args=tuple(args),
        storages=storages,
        config=config_from_json(entry.get("config")),
        grid=tuple(grid) if grid else None,
        data=entry.get("data", ""),
        data_note=entry.get("data_note", ""),
        launches=int(entry.get("launches", 1)),
        distinct=int(entry.get("distinct", 1)),
        checksums=tuple(int(c) for c in entry.get("checksums", ())),
    )


def launch_to_json(launch: RecordedLaunch) -> dict[str, Any]:
    args = []
    for arg in launch.args:
        if arg.view is not None:
            v = arg.view
            args.append({"param": arg.param, "tensor": {
                "storage": v.storage, "shape": list(v.shape), "stride": list(v.stride), "offset": v.offset, "dtype": v.dtype,
            }})
        else:
            args.append({"param": arg.param, "value": arg.value})
    entry = {
        "kernel": launch.kernel,
        "args": args,
        "storages": [{"lo": s.lo, "hi": s.hi, "device": s.device, "written": s.written} for s in launch.storages],
        "config": config_to_json(launch.config),
        "grid": list(launch.grid) if launch.grid else None,
        "data": launch.data,
        "data_note": launch.data_note,
        "launches": launch.launches,
        "distinct": launch.distinct,
    }
    if launch.checksums:  # only launches whose data was not saved have them
        entry["checksums"] = list(launch.checksums)
    return entry


def launches_from_events(events: list[dict]) -> dict[int, dict[str, RecordedLaunch]]:
    """graph index -> kernel -> its recorded first launch, with the run's launch counts."""
    counts = {(e["graph"], e["kernel"]): e for e in events if e.get("event") == "launch_counts"}
    by_graph: dict[int, dict[str, RecordedLaunch]] = {}
    for event in events:
        if event.get("event") != "launch":
            continue
        entry = dict(event)
        count = counts.get((event["graph"], event["kernel"]))
        if count is not None:
            entry["launches"], entry["distinct"] = count["launches"], count["distinct"]
        # The child names data files <graph index>/<kernel>.pt; in raw/ they live in <graph>/records/<kernel>.pt.
        entry["data"] = entry["data"].split("/", 1)[1] if entry.get("data") else ""
        by_graph.setdefault(event["graph"], {})[event["kernel"]] = launch_from_json(entry)
    return {g: dict(sorted(k.items())) for g, k in by_graph.items()}


def config_from_json(config: dict | None) -> AutotuneWinner | None:
    """The config a recorded launch ran with, as the capture child wrote it (record.py): kwargs, warps, stages, chooser."""
    if config is None:
        return None
    return AutotuneWinner(dict(config["kwargs"]), int(config["num_warps"]), int(config["num_stages"]), str(config["chosen_by"]))


def config_to_json(config: AutotuneWinner | None) -> dict | None:
    if config is None:
        return None
    return {"kwargs": config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages, "chosen_by": config.chosen_by}
