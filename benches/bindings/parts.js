// Whole-state saves against parts, from Node (issue 48): for N jobs, each due once in its
// own minute (so a tick a minute starts one run), the median over EVENTS ticks of the
// step, of the save (toJSON, or takeParts after trackChanges) and of the bytes it gives;
// then loading N jobs (fromJSON, fromParts). Run from the repository after
// `node bindings/node/build.js`: `node benches/bindings/parts.js [N ...]`.
'use strict';
const path = require('node:path');
const { Core } = require(path.join(__dirname, '..', '..', 'bindings', 'node'));

const T = 1750000020000;
const MINUTE = 60000;
const EVENTS = 21;

const ms = (from) => Number(process.hrtime.bigint() - from) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function build(n) {
  const core = new Core();
  const period = n * MINUTE;
  for (let i = 0; i < n; i++) {
    const offset = (T + (i + 1) * MINUTE) % period;
    const def = { name: `job_${i}`, schedule: { kind: 'every', period, offset } };
    core.step({ wall: T, mono: 0 }, { event: 'upsert', def, actor: 'bench' });
  }
  core.step({ wall: T, mono: 0 }, { event: 'process_started', process: 1 });
  return core;
}

/** EVENTS ticks from minute `from`, each starting one run (checked), saved by `save` (its bytes); runs finished untimed. */
function run(core, save, from) {
  const step = [], saved = [], bytes = [];
  for (let k = from; k < from + EVENTS; k++) {
    const now = { wall: T + k * MINUTE, mono: k * MINUTE };
    let t = process.hrtime.bigint();
    const effects = core.step(now, { event: 'tick', process: 1, held: [] });
    step.push(ms(t));
    t = process.hrtime.bigint();
    bytes.push(save(core));
    saved.push(ms(t));
    if (effects.filter((e) => e.effect === 'start').length !== 1) throw new Error(`tick ${k} did not start one run`);
    for (const e of effects.filter((e) => e.effect === 'start')) {
      core.step(now, { event: 'run_finished', process: 1, job: e.job, run: e.run, fence: e.fence, outcome: { outcome: 'ok' } });
    }
    save(core); // what the finish changed, so the next tick's save holds its own only
  }
  return { step: median(step), save: median(saved), bytes: median(bytes) };
}

const whole = (core) => Buffer.byteLength(core.toJSON());
function parts(core) {
  const p = core.takeParts();
  let n = Buffer.byteLength(p.globals);
  for (const r of Object.values(p.jobs)) n += r === null ? 0 : Buffer.byteLength(r);
  return n;
}

const sizes = process.argv.slice(2).map(Number);
console.log('| jobs | save | bytes per event | step (ms) | save (ms) | load (ms) |');
console.log('|---:|---|---:|---:|---:|---:|');
for (const n of sizes.length ? sizes : [1000, 10000, 100000]) {
  const core = build(n);
  const text = core.toJSON();
  let t = process.hrtime.bigint();
  Core.fromJSON(text);
  const loadWhole = ms(t);
  const w = run(core, whole, 1);
  core.trackChanges();
  const all = core.saveParts();
  t = process.hrtime.bigint();
  Core.fromParts(all.globals, all.jobs);
  const loadParts = ms(t);
  const p = run(core, parts, 1 + EVENTS);
  const f = (x) => x.toFixed(3);
  console.log(`| ${n} | whole | ${w.bytes} | ${f(w.step)} | ${f(w.save)} | ${f(loadWhole)} |`);
  console.log(`| ${n} | parts | ${p.bytes} | ${f(p.step)} | ${f(p.save)} | ${f(loadParts)} |`);
}
