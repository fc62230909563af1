"""Whole-state saves against parts, from Python (issue 48): for N jobs, each due once in its
own minute (so a tick a minute starts one run), the median over EVENTS ticks of the step,
of the save (to_json, or take_parts after track_changes) and of the bytes it gives; then
loading N jobs (from_json, from_parts). Run with the package installed:
``python benches/bindings/parts.py [N ...]``."""

import statistics
import sys
import time

from duetime import Core

T = 1_750_000_020_000
MINUTE = 60_000
EVENTS = 21


def build(n):
    core = Core()
    period = n * MINUTE
    for i in range(n):
        offset = (T + (i + 1) * MINUTE) % period
        job = {"name": f"job_{i}", "schedule": {"kind": "every", "period": period, "offset": offset}}
        core.step({"wall": T, "mono": 0}, {"event": "upsert", "def": job, "actor": "bench"})
    core.step({"wall": T, "mono": 0}, {"event": "process_started", "process": 1})
    return core


def run(core, save, first):
    step, saved, size = [], [], []
    for k in range(first, first + EVENTS):
        now = {"wall": T + k * MINUTE, "mono": k * MINUTE}
        t = time.perf_counter()
        effects = core.step(now, {"event": "tick", "process": 1, "held": []})
        step.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        size.append(save(core))
        saved.append((time.perf_counter() - t) * 1000)
        if sum(e["effect"] == "start" for e in effects) != 1:
            raise AssertionError(f"tick {k} did not start one run")
        for e in effects:
            if e["effect"] == "start":
                done = {"event": "run_finished", "process": 1, "job": e["job"], "run": e["run"],
                        "fence": e["fence"], "outcome": {"outcome": "ok"}}
                core.step(now, done)
        save(core)  # what the finish changed, so the next tick's save holds its own only
    return statistics.median(step), statistics.median(saved), statistics.median(size)


def whole(core):
    return len(core.to_json().encode())


def parts(core):
    p = core.take_parts()
    return len(p["globals"].encode()) + sum(len(r.encode()) for r in p["jobs"].values() if r is not None)


def main(sizes):
    print("| jobs | save | bytes per event | step (ms) | save (ms) | load (ms) |")
    print("|---:|---|---:|---:|---:|---:|")
    for n in sizes or [1000, 10000, 100000]:
        core = build(n)
        text = core.to_json()
        t = time.perf_counter()
        Core.from_json(text)
        load_whole = (time.perf_counter() - t) * 1000
        w = run(core, whole, 1)
        core.track_changes()
        every = core.save_parts()
        t = time.perf_counter()
        Core.from_parts(every["globals"], every["jobs"])
        load_parts = (time.perf_counter() - t) * 1000
        p = run(core, parts, 1 + EVENTS)
        print(f"| {n} | whole | {w[2]:.0f} | {w[0]:.3f} | {w[1]:.3f} | {load_whole:.3f} |")
        print(f"| {n} | parts | {p[2]:.0f} | {p[0]:.3f} | {p[1]:.3f} | {load_parts:.3f} |")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]])
