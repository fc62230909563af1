"""The Python package: the Core surface, errors as exceptions, and the conformance
replay of the worlds kept in tests/wire/ (byte-identical to the Rust core's answers)."""

import json
import pathlib

import pytest

from duetime import WIRE_VERSION, Core, DuetimeError

WIRE = pathlib.Path(__file__).resolve().parents[3] / "tests" / "wire"
T = 1_750_000_020_000
JOB = {"name": "hello", "schedule": {"kind": "every", "period": 60_000, "offset": 0}}


def upsert(core, job=JOB):
    return core.step({"wall": T, "mono": 0}, {"event": "upsert", "def": job, "actor": "me"})


def test_a_job_runs_on_its_grid_and_reads_show_it():
    core = Core()
    reply = upsert(core)[-1]
    assert reply["effect"] == "reply" and reply["result"]["Ok"]["name"] == "hello"
    assert core.next_wake() == T + 60_000
    effects = core.step({"wall": T + 60_000, "mono": 60_000}, {"event": "process_started", "process": 1})
    start = [e for e in effects if e["effect"] == "start"]
    assert [(s["job"], s["run"], s["process"]) for s in start] == [("hello", 1, 1)]
    assert core.job("hello")["status"] == "running"
    assert core.job("other") is None
    page = core.jobs(filter={"status": "running"}, limit=10)
    assert [v["name"] for v in page["items"]] == ["hello"]
    assert core.jobs(filter={"name_prefix": "x"})["items"] == []
    assert core.next_wake_for(1) is not None
    assert WIRE_VERSION == 1


def test_to_json_and_from_json_round_trip_the_state():
    core = Core({"tick": 30_000, "lease_ttl": 60_000, "grace": 60_000, "cancel_grace": 60_000,
                 "manual_per_hour": 20, "clock_jump": 60_000})
    upsert(core)
    text = core.to_json()
    again = Core.from_json(text)
    assert again.to_json() == text
    assert json.loads(text)["jobs"]["0"]["def"]["name"] == "hello"


def test_bad_input_raises_the_typed_error_naming_the_field():
    core = Core()
    with pytest.raises(DuetimeError) as e:
        core.step({"wall": T, "mono": 0}, {"event": "tick", "process": "p1", "held": []})
    assert (e.value.kind, e.value.field) == ("bad_field", "event.process")
    with pytest.raises(DuetimeError) as e:
        upsert(core, {**JOB, "schedule": {"kind": "cron", "expr": "61 * * * *"}})
    assert e.value.field == "event.def.schedule.expr" and "61" in e.value.message
    with pytest.raises(DuetimeError) as e:
        core.job("hello")  # no process has spoken: no clock to view at
    assert e.value.field == "now"
    with pytest.raises(DuetimeError) as e:
        Core({"tick": 0})
    assert e.value.kind == "bad_field" and e.value.field.startswith("config")
    state = json.loads(Core().to_json())
    state["format"] = 10_000
    with pytest.raises(DuetimeError) as e:
        Core.from_json(json.dumps(state))
    assert e.value.kind == "newer_format" and e.value.error["field"] == "state"


def test_a_refused_command_is_a_reply_effect_not_an_exception():
    effects = Core().step({"wall": T, "mono": 0}, {"event": "pause", "job": "nope", "actor": "me", "note": ""})
    assert effects[-1]["result"]["Err"]["refusal"] == "not_found"


def fixtures():
    seeds = sorted(p.name.split(".")[0] for p in WIRE.glob("seed-*.requests.jsonl"))
    assert seeds, f"no fixtures under {WIRE}"
    return seeds


@pytest.mark.parametrize("seed", fixtures())
def test_conformance_every_answer_is_the_rust_cores_byte_for_byte(seed):
    requests = (WIRE / f"{seed}.requests.jsonl").read_text().splitlines()
    answers = (WIRE / f"{seed}.answers.jsonl").read_text().splitlines()
    assert len(requests) == len(answers) > 100
    raw, typed = Core(), Core()
    differences = 0
    for request, answer in zip(requests, answers):
        differences += raw.request(request) != answer
        # The same through the dict API: what the Python caller sees.
        differences += through_the_api(typed, json.loads(request)) != json.loads(answer)
    assert differences == 0
    assert typed.to_json() == raw.to_json()


def through_the_api(core, r):
    """A request carried out by the Core method it names, answered as the wire would."""
    op = r["op"]
    if op == "new":
        core.__init__(r["config"])
        return {"ok": True}
    if op == "step":
        return {"ok": True, "effects": core.step(r["now"], r["event"])}
    if op == "save":
        return {"ok": True, "state": json.loads(core.to_json())}
    if op == "next_wake":
        return {"ok": True, "wake": core.next_wake()}
    if op == "next_wake_for":
        return {"ok": True, "wake": core.next_wake_for(r["process"])}
    if op == "jobs":
        return {"ok": True, "page": core.jobs(limit=r.get("limit"), now=r.get("now"))}
    if op == "job":
        return {"ok": True, "job": core.job(r["name"], r.get("now"))}
    raise AssertionError(f"the fixtures hold no {op}")
