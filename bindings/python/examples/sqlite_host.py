"""A whole host in Python over SQLite (the standard library's ``sqlite3``): runs a command on
a grid with the duetime core. One transaction per event holds what the step touched (the
jobs' rows, the globals), its journal lines and this host's notes of its runs; the effects
are carried out only after the commit; every start is a new process id, taken in a
transaction before it speaks. A kill -9 at any moment and a restart never run a due time
twice and lose no run (tests/test_sqlite_host.py kills it at random points and checks its
journal).

    python examples/sqlite_host.py DB COMMAND [ARGS...]

``EVERY_MS`` sets the period (default a minute). The command sees ``DUETIME_RUN``,
``DUETIME_FROM`` and ``DUETIME_TO``: the run and the due times it covers. It runs in a
session of its own with its output in ``DB.runs/<run>.<process>/out.log``, so it outlives
a host killed under it: the next incarnation reports it if it ended meanwhile (its exit
status is in the directory) and adopts it if it still runs (its pid, and its start time
so a reused pid is not mistaken for it, were in the store before it began; Linux's /proc),
before ``process_started``, so the core never records a run lost because its host
restarted (docs/host-contract.md, start-up). A run whose command vanished without a status
is let go: its lease lapses, and the core records it lost."""

import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

from duetime import Core

SCHEMA = """
create table if not exists meta (id integer primary key check (id = 0), process integer not null);
create table if not exists globals (id integer primary key check (id = 0), body text not null);
create table if not exists jobs (seq integer primary key, body text not null);
create table if not exists journal (id integer primary key autoincrement, process integer not null,
                                    body text not null);
create table if not exists runs (run integer primary key, start text not null, dir text,
                                 pid integer, born text);
"""
# The command's keeper, `sh -c WRAPPER sh DIR COMMAND...`: it runs the command only once the
# host says "go" (after the store has its pid), and writes the exit status atomically. A
# host killed before saying it closes the pipe: the command never runs, and "never" says so.
WRAPPER = (
    'd=$1; shift; read go || { echo never > "$d/exit.tmp"; mv "$d/exit.tmp" "$d/exit"; exit 0; }\n'
    '"$@" < /dev/null; echo $? > "$d/exit.tmp"; mv "$d/exit.tmp" "$d/exit"'
)
POLL_MS = 100  # how often the host looks for commands that ended


def now():
    """Both clocks in integer milliseconds (``monotonic_ns`` is nanoseconds: divide)."""
    return {"wall": time.time_ns() // 1_000_000, "mono": time.monotonic_ns() // 1_000_000}


def born(pid):
    """The start time of a live process (Linux's /proc), or None when it is gone (or a
    zombie): a pid given to another process since has another start time."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def alive(pid, started):
    """Whether the keeper noted as (pid, start time) still runs."""
    return pid is not None and started is not None and born(pid) == started


def exit_of(path):
    """The run's exit status, "never" if its keeper never ran it, or None (not yet)."""
    try:
        text = (pathlib.Path(path) / "exit").read_text().strip()
    except (OSError, TypeError):
        return None
    return text if text == "never" else int(text)


class Host:
    def __init__(self, db, command, every):
        self.db = sqlite3.connect(db, isolation_level=None)  # transactions said out loud
        self.db.executescript(SCHEMA)
        self.runs_dir = pathlib.Path(f"{db}.runs")
        self.command, self.every = command, every
        self.tick = min(30_000, every // 2)
        self.held = {}  # run id -> its start effect, for the runs this incarnation holds
        self.keepers = {}  # run id -> (directory, pid, start time) of its keeper
        self.children = {}  # this incarnation's keepers, polled so they are reaped
        with self.transaction():
            row = self.db.execute("select process from meta").fetchone()
            self.me = (row[0] if row else 0) + 1  # every incarnation is a new process
            self.db.execute("insert or replace into meta values (0, ?)", (self.me,))
        self.core = self.load()

    def transaction(self):
        db = self.db

        class Transaction:
            def __enter__(self):
                db.execute("begin immediate")

            def __exit__(self, kind, *_):
                db.execute("commit" if kind is None else "rollback")

        return Transaction()

    def load(self):
        """The core from the store's rows, or a new one with its job (stored whole)."""
        row = self.db.execute("select body from globals").fetchone()
        if row is None:
            core = Core({"tick": self.tick, "lease_ttl": 2 * self.tick, "grace": 2 * self.tick,
                         "cancel_grace": 2 * self.tick})
            core.track_changes()
            job = {"name": "every_period", "schedule": {"kind": "every", "period": self.every, "offset": 0}}
            self.core = core
            effects = self.core.step(now(), {"event": "upsert", "def": job, "actor": "example"})
            if effects.refused:
                raise SystemExit(f"the job was refused: {effects.refused}")
            self.commit(effects, core.save_parts(), [])
            return core
        jobs = dict(self.db.execute("select seq, body from jobs"))
        core = Core.from_parts(row[0], jobs)
        core.track_changes()
        return core

    def commit(self, effects, parts, notes):
        """The step's rows, journal lines and run notes in one transaction: a `start` of this
        process is noted before anything runs it. Should it fail, the core in memory is ahead
        of the store: the process ends, and its restart loads the store."""
        records = [(self.me, json.dumps(e)) for e in effects if e["effect"] == "record"]
        starts = [(e["run"], json.dumps(e)) for e in effects
                  if e["effect"] == "start" and e["process"] == self.me]
        try:
            with self.transaction():
                self.db.execute("insert or replace into globals values (0, ?)", (parts["globals"],))
                for seq, body in parts["jobs"].items():
                    if body is None:
                        self.db.execute("delete from jobs where seq = ?", (seq,))
                    else:
                        self.db.execute("insert or replace into jobs values (?, ?)", (seq, body))
                self.db.executemany("insert into journal (process, body) values (?, ?)", records)
                self.db.executemany("insert into runs (run, start) values (?, ?)", starts)
                for sql, args in notes:
                    self.db.execute(sql, args)
        except sqlite3.Error as e:
            raise SystemExit(f"the store refused a step ({e}): restart to load it again")

    def step(self, event, notes=()):
        effects = self.core.step(now(), event)
        self.commit(effects, self.core.take_parts(), notes)
        for e in effects:  # after the commit, never before
            if e["effect"] == "start" and e["process"] == self.me:
                self.launch(e)
            elif e["effect"] == "cancel" and e["process"] == self.me:
                self.stop(e["run"])
            elif e["effect"] != "record":
                print(json.dumps(e), file=sys.stderr)
        return effects

    def launch(self, start):
        """Starts the run's keeper in a session of its own (it outlives this process), notes
        its pid in the store, and only then lets it run the command."""
        run = start["run"]
        path = self.runs_dir / f"{run}.{self.me}"
        path.mkdir(parents=True, exist_ok=True)
        covers = start.get("covers") or {}
        env = {**os.environ, "DUETIME_RUN": str(run), "DUETIME_FROM": str(covers.get("from", "")),
               "DUETIME_TO": str(covers.get("to", ""))}
        with open(path / "out.log", "ab") as out:
            child = subprocess.Popen(["sh", "-c", WRAPPER, "sh", str(path), *self.command], env=env,
                                     stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        keeper = (str(path), child.pid, born(child.pid))
        try:
            with self.transaction():
                self.db.execute("update runs set dir = ?, pid = ?, born = ? where run = ?", (*keeper, run))
        except sqlite3.Error as e:
            raise SystemExit(f"the store refused a run's pid ({e}); it never runs")
        child.stdin.write(b"go\n")
        child.stdin.close()
        self.held[run], self.keepers[run], self.children[run] = start, keeper, child

    def stop(self, run):
        """A cancel for a run this process holds: its command's session is ended, the run let go."""
        _, pid, started = self.keepers.pop(run, (None, None, None))
        if alive(pid, started):
            os.killpg(pid, signal.SIGTERM)
        self.held.pop(run, None)
        self.children.pop(run, None)
        with self.transaction():
            self.db.execute("delete from runs where run = ?", (run,))

    def report(self, start, code):
        """Sends how the run's command ended; the run's note goes in the same transaction."""
        outcome = {"outcome": "ok"} if code == 0 else {"outcome": "failed", "kind": f"exit {code}"}
        run = start["run"]
        self.held.pop(run, None)
        self.keepers.pop(run, None)
        self.step({"event": "run_finished", "process": self.me, "job": start["job"], "run": run,
                   "fence": start["fence"], "outcome": outcome},
                  [("delete from runs where run = ?", (run,))])

    def reap(self):
        """Reports the runs held whose commands ended; lets go of one that vanished."""
        for run in sorted(self.held):
            child = self.children.get(run)
            if child is not None:
                child.poll()  # a keeper of this process is reaped, never left a zombie
            dir_, pid, started = self.keepers[run]
            code = exit_of(dir_)
            if code is None and not alive(pid, started):
                code = exit_of(dir_)  # it may have written its status between the two looks
                if code is None:
                    print(json.dumps({"vanished": run}), file=sys.stderr)
                    self.stop(run)
                    continue
            if code is not None:
                self.report(self.held[run], code)

    def take_over(self):
        """Start-up, in the order the core expects: each run an earlier incarnation left is
        reported if its command ended, adopted if it still runs, adopted and started now if
        its command never ran (its keeper never heard "go"); one that vanished is let go."""
        rows = self.db.execute("select run, start, dir, pid, born from runs order by run").fetchall()
        for run, start, dir_, pid, started in rows:
            start = json.loads(start)
            code = exit_of(dir_)
            going = alive(pid, started)
            if code is None and not going:
                code = exit_of(dir_) if dir_ is not None else "never"
            if code is None and not going:
                print(json.dumps({"vanished": run}), file=sys.stderr)
                with self.transaction():
                    self.db.execute("delete from runs where run = ?", (run,))
            elif code is not None and code != "never":
                self.report(start, code)
            else:
                self.held[run], self.keepers[run] = start, (dir_, pid, started)
                self.step({"event": "adopt", "process": self.me, "run": run, "fence": start["fence"]})
                if run in self.held and code == "never":  # adopted (a cancel let it go)
                    self.launch(start)

    def serve(self):
        self.take_over()
        self.step({"event": "process_started", "process": self.me})
        last = now()["wall"]
        while True:
            self.reap()
            wall, wake = now()["wall"], self.core.next_wake_for(self.me)
            due = last + self.tick if wake is None else min(wake, last + self.tick)
            due = max(due, last + POLL_MS)  # a wake in the past is "now", not a busy loop
            if wall < due:
                time.sleep(min(due - wall, POLL_MS) / 1000)
                continue
            held = [{"run": run, "fence": start["fence"]} for run, start in sorted(self.held.items())]
            self.step({"event": "tick", "process": self.me, "held": held})
            last = wall


if __name__ == "__main__":
    Host(sys.argv[1], sys.argv[2:], int(os.environ.get("EVERY_MS", "60000"))).serve()
