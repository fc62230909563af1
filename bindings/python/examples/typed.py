"""The package with its types, checked with ``mypy --strict`` (issue 48, item 5): the wire's
types narrow by their tags, so a host's handling of effects and ledger lines is checked."""

import time

from duetime import Core
from duetime.wire import EffectV2, Event, JobDef, LedgerEntry, Now


def now() -> Now:
    return {"wall": time.time_ns() // 1_000_000, "mono": time.monotonic_ns() // 1_000_000}


def fate(entry: LedgerEntry) -> str:
    if entry["kind"] == "ran":
        return f"ran by run {entry['run']}"
    if entry["kind"] == "missed":
        return f"missed ({entry['cause']}), {entry['count']} due times"
    return entry["kind"]


def carry_out(effect: EffectV2) -> None:
    if effect["effect"] == "start":
        print(f"start run {effect['run']} of {effect['job']} under fence {effect['fence']}")
    elif effect["effect"] == "record":
        entry = effect["entry"]
        if entry["type"] == "ledger":
            print(effect["job"], fate(entry))
    elif effect["effect"] == "reply":
        if effect["outcome"] == "refused":
            print("refused:", effect["refusal"]["refusal"])
        else:
            view = effect["view"]
            print("done:", view["status"] if view is not None else "no view")
    else:
        print(effect["effect"])


core = Core({"tick": 5000})
definition: JobDef = {"name": "hello", "schedule": {"kind": "every", "period": 60_000, "offset": 0}}
upsert: Event = {"event": "upsert", "def": definition, "actor": "me"}
if core.step(now(), upsert).refused:
    raise SystemExit("not defined")
core.step(now(), {"event": "process_started", "process": 1})
for effect in core.step(now(), {"event": "tick", "process": 1, "held": []}):
    carry_out(effect)
