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


def test_the_package_under_test_is_the_installed_one_when_asked():
    import os

    import duetime

    if os.environ.get("DUETIME_INSTALLED"):  # CI's wheel in a fresh virtualenv (issue 48)
        assert "site-packages" in duetime.__file__, duetime.__file__


def test_a_job_runs_on_its_grid_and_reads_show_it():
    core = Core()
    reply = upsert(core)[-1]
    assert reply["effect"] == "reply" and reply["outcome"] == "done"
    assert reply["view"]["name"] == "hello" and reply["job"] == "hello"
    assert "result" not in reply  # no Rust Ok/Err keys
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
    assert WIRE_VERSION == 2


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
    refusal = {"refusal": "not_found", "job": "nope"}
    assert effects[-1] == {"effect": "reply", "outcome": "refused", "job": None, "refusal": refusal}
    assert effects.refused == refusal


def test_a_raw_line_is_answered_in_the_wire_version_it_names_none_is_version_1():
    core = Core()
    pause = {"op": "step", "now": {"wall": T, "mono": 0}, "event": {"event": "pause", "job": "nope", "actor": "me", "note": ""}}
    v1 = json.loads(core.request(json.dumps(pause)))
    assert v1["effects"][0]["result"] == {"Err": {"refusal": "not_found", "job": "nope"}}
    v2 = json.loads(core.request(json.dumps({**pause, "wire": 2})))
    assert v2["effects"][0]["outcome"] == "refused"
    bad = json.loads(core.request(json.dumps({**pause, "wire": 3})))
    assert bad["error"]["kind"] == "unknown_wire_version" and "accepted: 1, 2" in bad["error"]["message"]
    assert json.loads(core.request('{"op":"version"}'))["version"]["wire_versions"] == [1, 2]


def fixtures():
    seeds = sorted(p.name.split(".")[0] for p in WIRE.glob("seed-*.requests.jsonl") if ".v2." not in p.name)
    assert seeds, f"no fixtures under {WIRE}"
    return seeds


@pytest.mark.parametrize("seed", fixtures())
def test_conformance_every_answer_is_the_rust_cores_byte_for_byte(seed):
    def lines(what):
        return (WIRE / f"{seed}.{what}.jsonl").read_text().splitlines()

    requests, answers = lines("requests"), lines("answers")
    requests_v2, answers_v2 = lines("v2.requests"), lines("v2.answers")
    assert len(requests) == len(answers) == len(requests_v2) == len(answers_v2) > 100
    raw, raw_v2, typed = Core(), Core(), Core()
    differences = 0
    for i, request in enumerate(requests):
        differences += raw.request(request) != answers[i]  # wire version 1, raw
        differences += raw_v2.request(requests_v2[i]) != answers_v2[i]  # version 2, raw
        # The same through the dict API, which speaks version 2: what the Python caller sees.
        differences += through_the_api(typed, json.loads(request)) != json.loads(answers_v2[i])
    assert differences == 0
    assert typed.to_json() == raw.to_json()


def through_the_api(core, r):
    """A request carried out by the Core method it names, answered as the wire would."""
    op = r["op"]
    if op == "new":
        core.__init__(r["config"])
        return {"ok": True}
    if op == "step":
        effects = core.step(r["now"], r["event"])
        answer = {"ok": True, "effects": list(effects)}
        if effects.refused is not None:
            answer["refused"] = effects.refused
        return answer
    if op == "track_changes":
        core.track_changes(r["on"])
        return {"ok": True}
    if op in ("take_parts", "save_parts"):
        parts = core.take_parts() if op == "take_parts" else core.save_parts()
        jobs = {str(seq): None if text is None else json.loads(text) for seq, text in parts["jobs"].items()}
        return {"ok": True, "parts": {"globals": json.loads(parts["globals"]), "jobs": jobs}}
    if op == "load_parts":
        loaded = Core.from_parts(r["parts"]["globals"], r["parts"]["jobs"])
        core.__dict__.update(loaded.__dict__)
        return {"ok": True}
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


# Issue 48's findings, as a Python developer met them.


def test_finding_2_the_readme_snippet_runs_as_written():
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    # The first snippet, then the one reading replies (wire version 2), in one scope.
    blocks = [b.split("```", 1)[0] for b in readme.split("```python\n")[1:3]]
    assert 'effect["outcome"] == "done"' in blocks[1]
    snippet = "\n".join(blocks)
    exec(compile(snippet, "README.md", "exec"), {})


def test_finding_7_a_value_json_cannot_carry_is_a_duetime_error_naming_the_field():
    import datetime

    core = Core()
    with pytest.raises(DuetimeError) as e:
        core.step({"wall": datetime.datetime.now(), "mono": 0}, {"event": "tick", "process": 1, "held": []})
    assert (e.value.kind, e.value.field) == ("bad_field", "now.wall")
    with pytest.raises(DuetimeError) as e:
        held = [{"run": 1, "fence": b"2"}]
        core.step({"wall": T, "mono": 0}, {"event": "tick", "process": 1, "held": held})
    assert e.value.field == "event.held[0].fence"


def test_finding_7_a_stored_state_loads_from_bytes_or_a_dict_and_its_errors_are_its_own():
    core = Core()
    upsert(core)
    text = core.to_json()
    assert Core.from_json(text.encode()).to_json() == text
    assert Core.from_json(json.loads(text)).to_json() == text
    with pytest.raises(DuetimeError) as e:
        Core.from_json("")
    assert e.value.field == "state" and "column 22" not in e.value.message
    with pytest.raises(DuetimeError) as e:
        Core.from_json(42)
    assert e.value.field == "state" and "accepted" in e.value.message


def test_finding_8_a_refused_upsert_is_named_on_the_step_itself():
    core = Core()
    refused = upsert(core, {**JOB, "name": "fast", "schedule": {"kind": "every", "period": 10_000, "offset": 0}})
    assert refused.refused["refusal"] == "invalid"
    assert refused.refused["error"]["error"] == "every_shorter_than_tick"
    taken = upsert(core)
    assert taken.refused is None and taken[-1]["outcome"] == "done"
    assert taken[-1]["view"]["name"] == "hello"
    assert isinstance(taken, list)


# State parts (issue 48, item 2).

MINUTE = 60_000


def _three_jobs():
    core = Core()
    for name in ("a", "b", "c"):
        job = {"name": name, "schedule": {"kind": "every", "period": MINUTE, "offset": 0}}
        core.step({"wall": T, "mono": 0}, {"event": "upsert", "def": job, "actor": "me"})
    core.step({"wall": T + 1000, "mono": 1000}, {"event": "process_started", "process": 1})
    core.track_changes()
    return core


def _tick(core, at):
    core.step({"wall": at, "mono": at - T}, {"event": "tick", "process": 1, "held": []})


def test_parts_a_step_touches_what_it_changed_and_parts_make_the_same_state():
    core = _three_jobs()
    whole = core.save_parts()
    assert sorted(whole["jobs"]) == [0, 1, 2] and json.loads(whole["globals"])["next_seq"] == 3
    assert core.take_parts()["jobs"] == {}
    _tick(core, T + MINUTE)
    assert sorted(core.take_parts()["jobs"]) == [0, 1, 2]
    core.step({"wall": T + MINUTE, "mono": MINUTE}, {"event": "remove", "job": "b", "actor": "me"})
    assert core.take_parts()["jobs"] == {1: None}
    every = core.save_parts()
    assert Core.from_parts(every["globals"], every["jobs"]).to_json() == core.to_json()
    as_dicts = {str(s): json.loads(r) for s, r in every["jobs"].items()}
    assert Core.from_parts(json.loads(every["globals"]), as_dicts).to_json() == core.to_json()


def test_parts_another_process_wrote_bring_a_loaded_core_up_to_date():
    writer = _three_jobs()
    stored = writer.save_parts()
    reader = Core.from_parts(stored["globals"], stored["jobs"])
    _tick(writer, T + MINUTE)
    changed = writer.take_parts()
    reader.put_parts(changed["globals"], changed["jobs"])
    assert reader.to_json() == writer.to_json()


def test_parts_untracked_or_bad_raise_the_typed_errors_of_a_load():
    with pytest.raises(DuetimeError) as e:
        Core().take_parts()
    assert (e.value.kind, e.value.field) == ("bad_field", "op")
    every = _three_jobs().save_parts()
    for jobs, field in [({**every["jobs"], 1: None}, "parts.jobs.1"), ({**every["jobs"], "x": "{}"}, "parts.jobs.x"),
                        ({**every["jobs"], 2: '{"def":'}, "parts.jobs.2")]:
        with pytest.raises(DuetimeError) as e:
            Core.from_parts(every["globals"], jobs)
        assert (e.value.kind, e.value.field) == ("bad_field", field)
    with pytest.raises(DuetimeError) as e:
        Core.from_parts({**json.loads(every["globals"]), "format": 10_000}, every["jobs"])
    assert (e.value.kind, e.value.field) == ("newer_format", "parts")
