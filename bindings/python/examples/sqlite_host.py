"""A whole host in Python over SQLite (the standard library's ``sqlite3``): runs a command on
a grid with the duetime core. One transaction per event holds what the step touched (the
jobs' rows, the globals) and its journal lines; the effects are carried out only after the
commit; every start is a new process id, taken in a transaction before it speaks. A kill -9
at any moment and a restart never run a due time twice (tests/test_sqlite_host.py kills it
at random points and checks its journal).

    python examples/sqlite_host.py DB COMMAND [ARGS...]

``EVERY_MS`` sets the period (default a minute). The command sees ``DUETIME_FROM`` and
``DUETIME_TO``: the due times its run covers. A run cut short by a kill is recorded lost
once its lease lapses, and a job not ``safe_to_repeat`` is then paused for a person rather
than run again (this host does not look for a command that outlived it, so it never sends
``adopt``)."""

import json
import os
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
"""


def now():
    """Both clocks in integer milliseconds (``monotonic_ns`` is nanoseconds: divide)."""
    return {"wall": time.time_ns() // 1_000_000, "mono": time.monotonic_ns() // 1_000_000}


class Host:
    def __init__(self, db, command, every):
        self.db = sqlite3.connect(db, isolation_level=None)  # transactions said out loud
        self.db.executescript(SCHEMA)
        self.command, self.every = command, every
        self.tick = min(30_000, every // 2)
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
            effects = self.step_only({"event": "upsert", "def": job, "actor": "example"})
            if effects.refused:
                raise SystemExit(f"the job was refused: {effects.refused}")
            self.commit(effects, core.save_parts())
            return core
        jobs = dict(self.db.execute("select seq, body from jobs"))
        core = Core.from_parts(row[0], jobs)
        core.track_changes()
        return core

    def step_only(self, event):
        return self.core.step(now(), event)

    def commit(self, effects, parts):
        """The step's rows and journal lines in one transaction. Should it fail, the core in
        memory is ahead of the store: the process ends, and its restart loads the store."""
        records = [(self.me, json.dumps(e)) for e in effects if e["effect"] == "record"]
        try:
            with self.transaction():
                self.db.execute("insert or replace into globals values (0, ?)", (parts["globals"],))
                for seq, body in parts["jobs"].items():
                    if body is None:
                        self.db.execute("delete from jobs where seq = ?", (seq,))
                    else:
                        self.db.execute("insert or replace into jobs values (?, ?)", (seq, body))
                self.db.executemany("insert into journal (process, body) values (?, ?)", records)
        except sqlite3.Error as e:
            raise SystemExit(f"the store refused a step ({e}): restart to load it again")

    def step(self, event):
        effects = self.step_only(event)
        self.commit(effects, self.core.take_parts())
        for e in effects:  # after the commit, never before
            if e["effect"] == "start":
                self.run(e)
            elif e["effect"] != "record":
                print(json.dumps(e), file=sys.stderr)

    def run(self, start):
        covers = start.get("covers") or {}
        env = {**os.environ, "DUETIME_FROM": str(covers.get("from", "")), "DUETIME_TO": str(covers.get("to", ""))}
        code = subprocess.run(self.command, env=env).returncode
        outcome = {"outcome": "ok"} if code == 0 else {"outcome": "failed", "kind": f"exit {code}"}
        self.step({"event": "run_finished", "process": self.me, "job": start["job"], "run": start["run"],
                   "fence": start["fence"], "outcome": outcome})

    def serve(self):
        self.step({"event": "process_started", "process": self.me})
        while True:
            wake = self.core.next_wake_for(self.me)
            wall = now()["wall"]
            wake = wall + self.tick if wake is None else wake
            time.sleep(max(0, min(wake - wall, self.tick)) / 1000)
            self.step({"event": "tick", "process": self.me, "held": []})


if __name__ == "__main__":
    Host(sys.argv[1], sys.argv[2:], int(os.environ.get("EVERY_MS", "60000"))).serve()
