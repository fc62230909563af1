// A whole host in Node over SQLite (better-sqlite3: Node 20 has no node:sqlite): runs a
// command on a grid with the duetime core. One transaction per event holds what the step
// touched (the jobs' rows, the globals), its journal lines and this host's notes of its runs;
// the effects are carried out only after the commit; every start is a new process id, taken
// in a transaction before it speaks. A kill -9 at any moment and a restart never run a due
// time twice and lose no run (test/sqlite-host.test.js kills it at random points).
//
//     node examples/sqlite-host.js DB COMMAND [ARGS...]
//
// EVERY_MS sets the period (default a minute). The command sees DUETIME_RUN, DUETIME_FROM and
// DUETIME_TO: the run and the due times it covers. It runs in a session of its own with its
// output in DB.runs/<run>.<process>/out.log, so it outlives a host killed under it: the next
// incarnation reports it if it ended meanwhile (its exit status is in the directory) and
// adopts it if it still runs (its pid, and its start time so a reused pid is not mistaken
// for it, were in the store before it began; Linux's /proc), before process_started, so the
// core never records a run lost because its host restarted (docs/host-contract.md). A run
// whose command vanished without a status is let go: its lease lapses, the core records it lost.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const Database = require('better-sqlite3');
const { Core } = require('..');

const SCHEMA = `
create table if not exists meta (id integer primary key check (id = 0), process integer not null);
create table if not exists globals (id integer primary key check (id = 0), body text not null);
create table if not exists jobs (seq integer primary key, body text not null);
create table if not exists journal (id integer primary key autoincrement, process integer not null, body text not null);
create table if not exists runs (run integer primary key, start text not null, dir text, pid integer, born text);`;
// The command's keeper, `sh -c KEEPER sh DIR COMMAND...`: it runs the command only once the
// host says "go" (after the store has its pid), and writes the exit status atomically. A host
// killed before saying it closes the pipe: the command never runs, and "never" says so.
const KEEPER = 'd=$1; shift; read go || { echo never > "$d/exit.tmp"; mv "$d/exit.tmp" "$d/exit"; exit 0; }\n'
  + '"$@" < /dev/null; echo $? > "$d/exit.tmp"; mv "$d/exit.tmp" "$d/exit"';
const POLL_MS = 100; // how often the host looks for commands that ended

const [file, ...command] = process.argv.slice(2);
const every = Number(process.env.EVERY_MS || 60000);
const tick = Math.min(30000, every / 2);
const db = new Database(file);
db.exec(SCHEMA);
const runsDir = `${file}.runs`;
const now = () => ({ wall: Date.now(), mono: Math.round(performance.now()) });
const held = new Map(); // run id -> its start effect, for the runs this incarnation holds
const keepers = new Map(); // run id -> { dir, pid, born } of its keeper
const me = db.transaction(() => { // every incarnation is a new process
  const id = (db.prepare('select process from meta').get()?.process ?? 0) + 1;
  db.prepare('insert or replace into meta values (0, ?)').run(id);
  return id;
}).immediate();

/** The start time of a live process (Linux's /proc), or null once it is gone (or a zombie). */
function born(pid) {
  let fields;
  try {
    fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop().trim().split(' ');
  } catch {
    return null;
  }
  return fields[0] === 'Z' || fields[0] === 'X' ? null : fields[19];
}
const alive = (k) => k.pid != null && k.born != null && born(k.pid) === k.born;

/** The run's exit status, 'never' if its keeper never ran it, or null (not yet). */
function exitOf(dir) {
  if (dir == null) return null;
  let text;
  try {
    text = fs.readFileSync(path.join(dir, 'exit'), 'utf8').trim();
  } catch {
    return null;
  }
  return text === 'never' ? text : Number(text);
}

/**
 * The step's rows, journal lines and run notes in one transaction: a start of this process is
 * noted before anything runs it. Should it fail, the core in memory is ahead of the store:
 * the process ends, and its restart loads the store.
 */
const commit = db.transaction((effects, parts, notes) => {
  db.prepare('insert or replace into globals values (0, ?)').run(parts.globals);
  for (const [seq, body] of Object.entries(parts.jobs)) {
    if (body === null) db.prepare('delete from jobs where seq = ?').run(Number(seq));
    else db.prepare('insert or replace into jobs values (?, ?)').run(Number(seq), body);
  }
  for (const e of effects) {
    if (e.effect === 'record') db.prepare('insert into journal (process, body) values (?, ?)').run(me, JSON.stringify(e));
    if (e.effect === 'start' && e.process === me) {
      db.prepare('insert into runs (run, start) values (?, ?)').run(e.run, JSON.stringify(e));
    }
  }
  for (const [sql, ...args] of notes) db.prepare(sql).run(...args);
});

function save(effects, parts, notes) {
  try {
    commit.immediate(effects, parts, notes);
  } catch (e) {
    console.error(`the store refused a step (${e.message}): restart to load it again`);
    process.exit(1);
  }
}

/** One of this host's notes of its runs, in a transaction of its own. */
const note = db.transaction((sql, args) => db.prepare(sql).run(...args));

function step(event, notes = []) {
  const effects = core.step(now(), event);
  save(effects, core.takeParts(), notes);
  for (const e of effects) { // after the commit, never before
    if (e.effect === 'start' && e.process === me) launch(e);
    else if (e.effect === 'cancel' && e.process === me) stop(e.run);
    else if (e.effect !== 'record') console.error(JSON.stringify(e));
  }
  return effects;
}

/** The core from the store's rows, or a new one with its job (stored whole). */
function load() {
  const globals = db.prepare('select body from globals').get();
  if (globals) {
    const loaded = Core.fromParts(globals.body, db.prepare('select seq, body from jobs').raw().all());
    loaded.trackChanges();
    return loaded;
  }
  const fresh = new Core({ tick, lease_ttl: 2 * tick, grace: 2 * tick, cancel_grace: 2 * tick });
  fresh.trackChanges();
  const def = { name: 'every_period', schedule: { kind: 'every', period: every, offset: 0 } };
  const effects = fresh.step(now(), { event: 'upsert', def, actor: 'example' });
  if (effects.refused) throw new Error(`the job was refused: ${JSON.stringify(effects.refused)}`);
  save(effects, fresh.saveParts(), []);
  return fresh;
}
const core = load();

/** Starts the run's keeper in a session of its own (it outlives this process), notes its pid in the store, then lets it run. */
function launch(start) {
  const dir = path.join(runsDir, `${start.run}.${me}`);
  fs.mkdirSync(dir, { recursive: true });
  const out = fs.openSync(path.join(dir, 'out.log'), 'a');
  const covers = { DUETIME_FROM: `${start.covers?.from ?? ''}`, DUETIME_TO: `${start.covers?.to ?? ''}` };
  const env = { ...process.env, DUETIME_RUN: `${start.run}`, ...covers };
  const child = spawn('sh', ['-c', KEEPER, 'sh', dir, ...command], { env, detached: true, stdio: ['pipe', out, out] });
  fs.closeSync(out);
  child.on('error', (e) => console.error(`run ${start.run}: ${e.message}`));
  const keeper = { dir, pid: child.pid, born: born(child.pid) };
  try {
    note.immediate('update runs set dir = ?, pid = ?, born = ? where run = ?', [dir, keeper.pid, keeper.born, start.run]);
  } catch (e) {
    console.error(`the store refused a run's pid (${e.message}); it never runs`);
    process.exit(1); // the keeper's pipe closes unanswered
  }
  child.stdin.end('go\n');
  held.set(start.run, start);
  keepers.set(start.run, keeper);
}

/** A cancel for a run this process holds: its command's session is ended, the run let go. */
function stop(run) {
  const keeper = keepers.get(run);
  try {
    if (keeper && alive(keeper)) process.kill(-keeper.pid, 'SIGTERM');
  } catch { // it ended meanwhile
  }
  held.delete(run);
  keepers.delete(run);
  note.immediate('delete from runs where run = ?', [run]);
}

/** Sends how the run's command ended; the run's note goes in the same transaction. */
function report(start, code) {
  const outcome = code === 0 ? { outcome: 'ok' } : { outcome: 'failed', kind: `exit ${code}` };
  held.delete(start.run);
  keepers.delete(start.run);
  const event = { event: 'run_finished', process: me, job: start.job, run: start.run, fence: start.fence, outcome };
  step(event, [['delete from runs where run = ?', start.run]]);
}

/** Reports the runs held whose commands ended; lets go of one that vanished. */
function reap() {
  for (const run of [...held.keys()].sort((a, b) => a - b)) {
    const keeper = keepers.get(run);
    let code = exitOf(keeper.dir);
    if (code === null && !alive(keeper)) {
      code = exitOf(keeper.dir); // it may have written its status between the two looks
      if (code === null) {
        console.error(JSON.stringify({ vanished: run }));
        stop(run);
        continue;
      }
    }
    if (code !== null) report(held.get(run), code);
  }
}

/**
 * Start-up, in the order the core expects: each run an earlier incarnation left is reported
 * if its command ended, adopted if it still runs, adopted and started now if its command never
 * ran (its keeper never heard "go"); one that vanished is let go.
 */
function takeOver() {
  for (const row of db.prepare('select run, start, dir, pid, born from runs order by run').all()) {
    const start = JSON.parse(row.start);
    const keeper = { dir: row.dir, pid: row.pid, born: row.born };
    const going = alive(keeper);
    let code = exitOf(row.dir);
    if (code === null && !going) code = row.dir === null ? 'never' : exitOf(row.dir);
    if (code === null && !going) {
      console.error(JSON.stringify({ vanished: row.run }));
      note.immediate('delete from runs where run = ?', [row.run]);
    } else if (code !== null && code !== 'never') {
      report(start, code);
    } else {
      held.set(row.run, start);
      keepers.set(row.run, keeper);
      step({ event: 'adopt', process: me, run: row.run, fence: start.fence });
      if (held.has(row.run) && code === 'never') launch(start); // adopted (a cancel let it go)
    }
  }
}

takeOver();
step({ event: 'process_started', process: me });
let last = Date.now();
(function turn() {
  reap();
  const wall = Date.now();
  const wake = core.nextWakeFor(me);
  let due = wake === null ? last + tick : Math.min(wake, last + tick);
  due = Math.max(due, last + POLL_MS); // a wake in the past is "now", not a busy loop
  if (wall >= due) {
    step({ event: 'tick', process: me, held: [...held.values()].map((s) => ({ run: s.run, fence: s.fence })) });
    last = wall;
  }
  setTimeout(turn, Math.max(0, Math.min(due - Date.now(), POLL_MS)));
})();
