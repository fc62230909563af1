// A whole host in Node: runs a command every minute with the duetime core, keeping the state
// and its journal in one file written atomically, so `kill -9` and a restart never run a due
// time twice. Usage: node examples/every-minute.js STATE_FILE COMMAND [ARGS...]
// (EVERY_MS changes the period, for tests). The command sees DUETIME_FROM/TO: its due times.
'use strict';
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');
const { Core } = require('..');

const [file, ...command] = process.argv.slice(2);
const every = Number(process.env.EVERY_MS || 60000);
const tick = Math.min(30000, every / 2);
const config = { tick, lease_ttl: 2 * tick, grace: 2 * tick, cancel_grace: 2 * tick, manual_per_hour: 20, clock_jump: 60000 };
const saved = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
const core = saved ? Core.fromJSON(saved.state) : new Core(config);
const journal = saved ? saved.journal : [];
const me = (saved ? saved.process : 0) + 1; // every incarnation is a new process
const now = () => ({ wall: Date.now(), mono: Math.round(performance.now()) });

function save() { // a new file, flushed to disk, renamed over the old: never half written
  const fd = fs.openSync(`${file}.tmp`, 'w');
  fs.writeSync(fd, JSON.stringify({ process: me, state: core.toJSON(), journal: journal.slice(-1000) }));
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(`${file}.tmp`, file);
}

function step(event) {
  const effects = core.step(now(), event);
  journal.push(...effects.filter((e) => e.effect === 'record'));
  save(); // the state and journal are on disk before any effect is carried out
  for (const e of effects) {
    if (e.effect === 'start') run(e);
    else if (e.effect !== 'record') console.error(JSON.stringify(e));
  }
}

function run(start) {
  const env = { ...process.env, DUETIME_FROM: `${start.covers?.from ?? ''}`, DUETIME_TO: `${start.covers?.to ?? ''}` };
  const child = spawnSync(command[0], command.slice(1), { stdio: 'inherit', env });
  const outcome = child.status === 0 ? { outcome: 'ok' } : { outcome: 'failed', kind: `exit ${child.status ?? child.signal}` };
  step({ event: 'run_finished', process: me, job: start.job, run: start.run, fence: start.fence, outcome });
}

save(); // this process's id is taken before it speaks
if (!saved) {
  const def = { name: 'every_minute', schedule: { kind: 'every', period: every, offset: 0 } };
  step({ event: 'upsert', def, actor: 'example' });
}
step({ event: 'process_started', process: me });
(function sleep() {
  const wake = core.nextWakeFor(me) ?? Date.now() + tick;
  const ms = Math.max(0, Math.min(wake - Date.now(), tick));
  setTimeout(() => { step({ event: 'tick', process: me, held: [] }); sleep(); }, ms);
})();
