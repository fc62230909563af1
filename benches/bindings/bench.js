// The wire/benches/crossing.rs scenes through the Node package: a tick with nothing due and
// a run cycle at 1,000 jobs, timed over repeated loops (best of five), through the API and
// as raw request lines. `node benches/bindings/bench.js` after `node bindings/node/build.js`.
'use strict';
const path = require('node:path');
const { Core } = require(path.join(__dirname, '..', '..', 'bindings', 'node'));

const START = 1748854800000;
const JOBS = 1000;
const now = (t) => ({ wall: t, mono: t - START });
const tick = { event: 'tick', process: 1, held: [] };

function built() {
  const core = new Core();
  for (let i = 0; i < JOBS; i++) {
    const def = { name: `job_${String(i).padStart(4, '0')}`, schedule: { kind: 'every', period: JOBS * 100, offset: i * 100 + 50 } };
    core.step(now(START), { event: 'upsert', def, actor: 'bench' });
  }
  core.step(now(START), { event: 'process_started', process: 1 });
  return core;
}

function best(f, n) {
  let min = Infinity;
  for (let round = 0; round < 5; round++) {
    const began = process.hrtime.bigint();
    f(n);
    min = Math.min(min, Number(process.hrtime.bigint() - began) / n / 1000);
  }
  return min.toFixed(2);
}

const idle = built();
const raw = built();
const line = JSON.stringify({ op: 'step', now: now(START + 10), event: tick });
const cycling = built();
let k = -1;
function cycle(n) {
  for (let i = 0; i < n; i++) {
    k += 1;
    const t = START + k * 100 + 60;
    for (const s of cycling.step(now(t), tick).filter((e) => e.effect === 'start')) {
      cycling.step(now(t), { event: 'run_finished', process: 1, job: s.job, run: s.run, fence: s.fence, outcome: { outcome: 'ok' } });
    }
  }
}

console.log(`node tick_nothing_due/api ${best((n) => { for (let i = 0; i < n; i++) idle.step(now(START + 10), tick); }, 20000)} us`);
console.log(`node tick_nothing_due/raw ${best((n) => { for (let i = 0; i < n; i++) raw.request(line); }, 20000)} us`);
console.log(`node run_cycle/api ${best(cycle, 2000)} us`);
