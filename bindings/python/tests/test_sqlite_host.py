"""examples/sqlite_host.py end to end (issue 48, item 3): a real command of 1.5 s on a
two-second grid (a tick of one second), the host killed with SIGKILL many times at random
points: inside a run and restarted at once (the new incarnation must adopt the command
still going), inside a run and restarted after it ended (the new one must report it), and
anywhere. From the commands' own log and the store's journal: no due time ran twice, no due
time is in two ledger lines, every due time from the first to the last accounted is
accounted, no run was lost, and every adopted run settled once. The kill points come from
a seed printed on failure; DUETIME_KILL_SECONDS bounds the killing (default 40 s)."""

import json
import os
import pathlib
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "sqlite_host.py"
PERIOD = 2000
RUN = 1.5  # the command's length in seconds: kills land inside runs as often as between


def runs_in(log):
    """The commands' own log: (run, from, to) of every command that began."""
    lines = log.read_text().split("\n") if log.exists() else []
    return [tuple(map(int, line.split())) for line in lines if line]


def until(done, seconds):
    """Waits until `done()` or `seconds` have passed; whether it came true."""
    limit = time.time() + seconds
    while not done():
        if time.time() > limit:
            return False
        time.sleep(0.05)
    return True


def adoptions(db):
    """How many runs the store's journal says were adopted."""
    return sum(1 for _, e in journal(db) if e.get("what") == "adopted")


def all_ended(db):
    """Whether every command the host began has ended (its keeper wrote its exit status)."""
    runs = pathlib.Path(f"{db}.runs")
    return not runs.exists() or all((d / "exit").exists() for d in runs.iterdir())


def life(db, command, log, rng, mode, gate):
    """One life of the host, killed by `mode`: "adopt" and "report" inside a run (restarted
    while the command still runs, or after it ended), "anywhere" at a random moment. In
    "adopt", the command is held going by a gate file until the next incarnation has
    adopted it (that life opens the gate), so a host slow to start on a loaded machine still
    finds it going; in "report", the next life begins only once the command has ended."""
    before = len(runs_in(log))
    adopted = adoptions(db) if gate.exists() else None
    host = subprocess.Popen([sys.executable, str(EXAMPLE), str(db), *command],
                            env={**os.environ, "EVERY_MS": str(PERIOD)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.time() * 1000
    if adopted is not None:
        assert until(lambda: adoptions(db) > adopted, 60), "the run held going was never adopted"
        gate.unlink()
    if mode == "anywhere":
        time.sleep(rng.uniform(0.3, 3.5) * PERIOD / 1000)
    else:
        limit = time.time() + 3 * PERIOD / 1000
        while len(runs_in(log)) == before and time.time() < limit:
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 0.2) * RUN)  # early: a slow restart still finds it going
    assert host.poll() is None, "the host died by itself"
    if mode == "adopt":
        gate.touch()
    host.send_signal(signal.SIGKILL)
    host.wait()
    if mode == "report":
        assert until(lambda: all_ended(db), 60), "a command never ended"
    else:
        time.sleep(rng.uniform(0, 0.2))
    return started


def journal(db):
    """The journal's entries, each with the process that wrote it."""
    if not pathlib.Path(db).exists():
        return []
    with sqlite3.connect(db, timeout=5) as store:
        rows = store.execute("select process, body from journal order by id").fetchall()
    return [(process, json.loads(body)["entry"]) for process, body in rows]


def marks(db):
    """The store's process counter and journal length (0 and 0 before a host has made them):
    a life killed before its first commit leaves both as they were."""
    if not pathlib.Path(db).exists():
        return 0, 0
    with sqlite3.connect(db, timeout=5) as store:
        try:
            row = store.execute("select process from meta").fetchone()
            lines = store.execute("select count(*) from journal").fetchone()[0]
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return 0, 0
            raise
    return (row[0] if row else 0), lines


def check_runs(entries, seed):
    """No run lost or settled twice; adopted runs settled once; an ended run reported by a
    later incarnation."""
    history = [(p, e) for p, e in entries if e["type"] == "history"]
    assert not [e for _, e in history if e["what"] == "lost"], f"a run was lost (seed {seed})"
    settled = Counter(e["run"] for _, e in history if e["what"] == "settled")
    assert all(n == 1 for n in settled.values()), f"a run settled twice: {settled} (seed {seed})"
    adopted = {e["run"] for _, e in history if e["what"] == "adopted"}
    assert adopted, f"no run was adopted (seed {seed})"
    assert all(settled[run] == 1 for run in adopted), f"an adopted run never settled (seed {seed})"
    starter = {e["run"]: e["process"] for _, e in history if e["what"] == "started"}
    later = [e["run"] for p, e in history
             if e["what"] == "settled" and p != starter[e["run"]] and e["run"] not in adopted]
    assert later, f"no run that ended while its host was down was reported (seed {seed})"


def test_kill_9_at_random_points_runs_every_due_time_once_and_adopts(tmp_path):
    seed = int(os.environ.get("DUETIME_KILL_SEED", random.randrange(1 << 30)))
    budget = float(os.environ.get("DUETIME_KILL_SECONDS", "40"))
    rng = random.Random(seed)
    db, log, gate = tmp_path / "store.db", tmp_path / "runs.log", tmp_path / "gate"
    hold = f"while [ -e '{gate}' ]; do sleep 0.05; done"
    command = ["sh", "-c",
               f"echo \"$DUETIME_RUN $DUETIME_FROM $DUETIME_TO\" >> '{log}'; sleep {RUN}; {hold}"]
    modes, lives, begun = ["adopt", "report", "anywhere"], [], time.time()
    # Each start takes a new process id: a life that wrote anything took exactly one; one
    # killed before its first commit (a loaded machine can be that slow) took none.
    took = 0

    def live(mode):
        nonlocal took
        process, lines = marks(db)
        lives.append(life(db, command, log, rng, mode, gate))
        after, lines_after = marks(db)
        assert after == process + 1 or (after == process and lines_after == lines), \
            f"a start took {after - process} process ids and wrote {lines_after - lines} lines (seed {seed})"
        took += after - process

    while len(lives) < len(modes) or time.time() - begun < budget:
        live(modes[len(lives)] if len(lives) < len(modes) else rng.choice(modes))
    if gate.exists():
        live("anywhere")
    last = time.time() * 1000
    host = subprocess.Popen([sys.executable, str(EXAMPLE), str(db), *command],
                            env={**os.environ, "EVERY_MS": str(PERIOD)}, stderr=subprocess.DEVNULL)
    until(lambda: any(a > last for _, a, _ in runs_in(log)), 60)
    time.sleep(PERIOD / 1000)
    host.send_signal(signal.SIGTERM)
    host.wait()

    runs = runs_in(log)
    assert len({run for run, _, _ in runs}) == len(runs), f"a run's command began twice (seed {seed})"
    ran = [t for _, a, b in runs for t in range(a, b + PERIOD, PERIOD)]
    assert len(set(ran)) == len(ran), f"a due time ran twice: {runs} (seed {seed})"
    assert any(t > last for t in ran), f"no run after {len(lives)} kills (seed {seed})"
    entries = journal(db)
    lines = [e for _, e in entries if e["type"] == "ledger"]
    accounted = [t for e in lines for t in range(e["from"], e["to"] + PERIOD, PERIOD)]
    assert len(set(accounted)) == len(accounted), f"a due time in two ledger lines (seed {seed})"
    seen = set(accounted) | set(ran)
    missing = [t for t in range(min(seen), max(seen) + PERIOD, PERIOD) if t not in seen]
    assert not missing, f"due times never accounted: {missing} (seed {seed})"
    check_runs(entries, seed)
    process = sqlite3.connect(db).execute("select process from meta").fetchone()[0]
    assert process == took + 1, f"each start is a new process (seed {seed})"


def test_a_start_committed_but_never_launched_is_adopted_and_run_once(tmp_path):
    """A kill between the commit of a start and its keeper's launch, made by hand: the first
    run's keeper killed with its host and its note left without a pid. The next incarnation
    adopts the run and starts its command, once."""
    db, log = tmp_path / "store.db", tmp_path / "runs.log"
    command = ["sh", "-c", f"echo \"$DUETIME_RUN\" >> '{log}'; sleep {RUN}"]
    host = subprocess.Popen([sys.executable, str(EXAMPLE), str(db), *command],
                            env={**os.environ, "EVERY_MS": str(PERIOD)}, stderr=subprocess.DEVNULL)
    limit = time.time() + 3 * PERIOD / 1000
    while not log.exists() and time.time() < limit:
        time.sleep(0.02)
    host.send_signal(signal.SIGKILL)
    host.wait()
    store = sqlite3.connect(db, isolation_level=None)
    run, pid = store.execute("select run, pid from runs").fetchone()
    os.killpg(pid, signal.SIGKILL)
    store.execute("update runs set dir = null, pid = null, born = null")
    log.unlink()
    host = subprocess.Popen([sys.executable, str(EXAMPLE), str(db), *command],
                            env={**os.environ, "EVERY_MS": str(PERIOD)}, stderr=subprocess.DEVNULL)
    until(lambda: any(e.get("what") == "settled" and e.get("run") == run
                      for _, e in journal(db)), 60)
    host.send_signal(signal.SIGTERM)
    host.wait()
    assert [int(line) for line in log.read_text().split()].count(run) == 1, "run once, anew"
    history = [e for _, e in journal(db) if e["type"] == "history"]
    assert [e["what"] for e in history if e.get("run") == run] == ["started", "adopted", "settled"]
