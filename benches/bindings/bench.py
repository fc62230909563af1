"""The wire/benches/crossing.rs scenes through the Python package: a tick with nothing
due and a run cycle at 1,000 jobs, timed over repeated loops (best of five), through the
dict API and as raw request lines. `python benches/bindings/bench.py` with duetime installed."""

import json
import time

from duetime import Core

START, JOBS = 1_748_854_800_000, 1000


def now(t):
    return {"wall": t, "mono": t - START}


def built():
    core = Core()
    for i in range(JOBS):
        job = {"name": f"job_{i:04}", "schedule": {"kind": "every", "period": JOBS * 100, "offset": i * 100 + 50}}
        core.step(now(START), {"event": "upsert", "def": job, "actor": "bench"})
    core.step(now(START), {"event": "process_started", "process": 1})
    return core


def best(f, n):
    times = []
    for _ in range(5):
        began = time.perf_counter()
        f(n)
        times.append((time.perf_counter() - began) / n * 1e6)
    return min(times)


def idle_api(n, core=built(), tick={"event": "tick", "process": 1, "held": []}):
    for _ in range(n):
        core.step(now(START + 10), tick)


def idle_raw(n, core=built()):
    line = json.dumps({"op": "step", "now": now(START + 10), "event": {"event": "tick", "process": 1, "held": []}})
    for _ in range(n):
        core.request(line)


def cycle(n, core=built(), k=[-1]):
    for _ in range(n):
        k[0] += 1
        t = START + k[0] * 100 + 60
        starts = [e for e in core.step(now(t), {"event": "tick", "process": 1, "held": []}) if e["effect"] == "start"]
        for s in starts:
            core.step(now(t), {"event": "run_finished", "process": 1, "job": s["job"], "run": s["run"],
                               "fence": s["fence"], "outcome": {"outcome": "ok"}})


if __name__ == "__main__":
    print(f"python tick_nothing_due/api {best(idle_api, 20000):.2f} us")
    print(f"python tick_nothing_due/raw {best(idle_raw, 20000):.2f} us")
    print(f"python run_cycle/api {best(cycle, 2000):.2f} us")
