// examples/every-minute.js, end to end: a real command on a two-second grid (a tick of one
// second, the core's shortest). The host is killed with SIGKILL twice between runs at
// different phases, and once by its own command, after the command did its work and before
// the host heard how it ended (the window where a careless host would run it again). After
// every restart no due time may run twice, and after the between-runs kills runs go on.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');

const EXAMPLE = path.join(__dirname, '..', 'examples', 'every-minute.js');
const PERIOD = 2000;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** One life of the host: until `kill` says to kill it, or until it dies by itself. */
async function life(state, command, kill) {
  const host = spawn(process.execPath, [EXAMPLE, state, ...command], {
    env: { ...process.env, EVERY_MS: `${PERIOD}` },
    stdio: 'ignore',
  });
  const exited = new Promise((done) => host.on('exit', (code, signal) => done(signal)));
  const started = Date.now();
  const ended = await Promise.race([exited, kill().then(() => 'alive')]);
  if (ended === 'alive') {
    host.kill('SIGKILL');
    await exited;
  }
  return { started, ended };
}

test('kill -9 and restart never run a due time twice', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'duetime-example-'));
  const [state, log, marker] = ['state.json', 'runs.log', 'kill-me'].map((f) => path.join(dir, f));
  const script = `echo "$DUETIME_FROM $DUETIME_TO" >> '${log}'; if [ -e '${marker}' ]; then rm '${marker}'; kill -9 $PPID; fi`;
  const command = ['sh', '-c', script];
  const lives = [];
  for (const phase of [0, 700]) lives.push(await life(state, command, () => sleep(3 * PERIOD + phase)));
  fs.writeFileSync(marker, '');
  lives.push(await life(state, command, () => sleep(4 * PERIOD)));
  assert.equal(lives[2].ended, 'SIGKILL', 'the command killed its host');
  lives.push(await life(state, command, () => sleep(3 * PERIOD)));

  const runs = fs.readFileSync(log, 'utf8').trim().split('\n').map((l) => l.split(' ').map(Number));
  const due = runs.flatMap(([from, to]) => Array.from({ length: (to - from) / PERIOD + 1 }, (_, i) => from + PERIOD * i));
  assert.equal(new Set(due).size, due.length, `a due time ran twice: ${JSON.stringify(runs)}`);
  for (const { started } of lives.slice(0, 3)) {
    assert.ok(due.some((t) => t > started), `no run in the life started at ${started}: ${JSON.stringify(runs)}`);
  }
  const saved = JSON.parse(fs.readFileSync(state, 'utf8'));
  assert.equal(saved.process, 4, 'each restart is a new process');
  assert.ok(saved.journal.some((r) => r.entry.what === 'settled'), 'the journal is kept');
  fs.rmSync(dir, { recursive: true });
});
