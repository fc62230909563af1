"""examples/sqlite_host.py end to end (issue 48, item 3): a real command on a two-second grid
(a tick of one second), the host killed with SIGKILL at random moments between runs, and
once by its own command after the command did its work and before the host heard how it
ended (where a careless host would run it again). From the commands' own log and the
store's journal: no due time ran twice, no due time is in two ledger lines, and every due
time from the first to the last accounted is accounted (ran, missed, or the one run cut
short). The kill points come from a seed printed on failure."""

import json
import os
import pathlib
import random
import signal
import sqlite3
import subprocess
import sys
import time

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "sqlite_host.py"
PERIOD = 2000


def life(db, command, seconds):
    """One life of the host: killed after `seconds`, or dead by itself before."""
    env = {**os.environ, "EVERY_MS": str(PERIOD)}
    host = subprocess.Popen([sys.executable, str(EXAMPLE), str(db), *command], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.time() * 1000
    try:
        host.wait(timeout=seconds)
        return started, "died"
    except subprocess.TimeoutExpired:
        host.send_signal(signal.SIGKILL)
        host.wait()
        return started, "killed"


def ledger(db):
    rows = sqlite3.connect(db).execute("select body from journal order by id").fetchall()
    entries = [json.loads(body)["entry"] for (body,) in rows]
    return [e for e in entries if e["type"] == "ledger"], entries


def test_kill_9_at_random_moments_never_runs_a_due_time_twice_and_loses_none(tmp_path):
    seed = int(os.environ.get("DUETIME_KILL_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    db, log, marker = tmp_path / "store.db", tmp_path / "runs.log", tmp_path / "kill-me"
    script = f"echo \"$DUETIME_FROM $DUETIME_TO\" >> '{log}'; if [ -e '{marker}' ]; then rm '{marker}'; kill -9 $PPID; fi"
    command = ["sh", "-c", script]
    lives = [life(db, command, rng.uniform(2.5, 3.5) * PERIOD / 1000) for _ in range(3)]
    marker.write_text("")
    lives.append(life(db, command, 4 * PERIOD / 1000))
    assert lives[-1][1] == "died", f"the command killed its host (seed {seed})"
    lives.append(life(db, command, 3 * PERIOD / 1000))

    runs = [tuple(map(int, line.split())) for line in log.read_text().split("\n") if line]
    ran = [t for a, b in runs for t in range(a, b + PERIOD, PERIOD)]
    assert len(set(ran)) == len(ran), f"a due time ran twice: {runs} (seed {seed})"
    for started, _ in lives[:3]:
        assert any(t > started for t in ran), f"no run in the life from {started}: {runs} (seed {seed})"
    lines, entries = ledger(db)
    accounted = [t for e in lines for t in range(e["from"], e["to"] + PERIOD, PERIOD)]
    assert len(set(accounted)) == len(accounted), f"a due time in two ledger lines (seed {seed})"
    seen = set(accounted) | set(ran)
    grid = range(min(seen), max(seen) + PERIOD, PERIOD)
    missing = [t for t in grid if t not in seen]
    assert not missing, f"due times never accounted: {missing} (seed {seed})"
    assert any(e.get("what") == "settled" for e in entries), "the journal is kept"
    process = sqlite3.connect(db).execute("select process from meta").fetchone()[0]
    assert process == len(lives), "each start is a new process"
