// State parts (issue 48, item 2): after each step a host writes only the jobs it touched
// and the globals; a core loads from parts and takes in parts another process wrote.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Core, DuetimeError } = require(process.env.DUETIME_PACKAGE || '..');

const T = 1750000020000;
const MINUTE = 60000;
const def = (name) => ({ name, schedule: { kind: 'every', period: MINUTE, offset: 0 } });
const at = (ms) => ({ wall: ms, mono: ms - T });

function threeJobs() {
  const core = new Core();
  for (const name of ['a', 'b', 'c']) core.step(at(T), { event: 'upsert', def: def(name), actor: 'me' });
  core.step(at(T + 1000), { event: 'process_started', process: 1 });
  core.trackChanges();
  return core;
}

test('a step touches what it changed; parts make the same state again', () => {
  const core = threeJobs();
  const whole = core.saveParts();
  assert.deepEqual(Object.keys(whole.jobs), ['0', '1', '2']);
  assert.equal(JSON.parse(whole.globals).next_seq, 3);
  assert.deepEqual(core.takeParts().jobs, {});
  core.step(at(T + MINUTE), { event: 'tick', process: 1, held: [] });
  assert.deepEqual(Object.keys(core.takeParts().jobs), ['0', '1', '2']);
  core.step(at(T + MINUTE), { event: 'remove', job: 'b', actor: 'me' });
  assert.deepEqual(core.takeParts().jobs, { 1: null });
  const all = core.saveParts();
  assert.equal(Core.fromParts(all.globals, all.jobs).toJSON(), core.toJSON());
  const pairs = Object.entries(all.jobs).map(([s, r]) => [Number(s), JSON.parse(r)]);
  assert.equal(Core.fromParts(JSON.parse(all.globals), new Map(pairs)).toJSON(), core.toJSON());
});

test('parts another process wrote bring a loaded core up to date', () => {
  const writer = threeJobs();
  const stored = writer.saveParts();
  const reader = Core.fromParts(stored.globals, stored.jobs);
  writer.step(at(T + MINUTE), { event: 'tick', process: 1, held: [] });
  writer.step(at(T + MINUTE), { event: 'upsert', def: def('d'), actor: 'me' });
  const changed = writer.takeParts();
  reader.putParts(changed.globals, changed.jobs);
  assert.equal(reader.toJSON(), writer.toJSON());
});

test('untracked or bad parts throw the typed errors of a load', () => {
  const throwsWith = (f, kind, field) =>
    assert.throws(f, (e) => e instanceof DuetimeError && e.kind === kind && e.field === field);
  throwsWith(() => new Core().takeParts(), 'bad_field', 'op');
  const all = threeJobs().saveParts();
  throwsWith(() => Core.fromParts(all.globals, { ...all.jobs, 1: null }), 'bad_field', 'parts.jobs.1');
  throwsWith(() => Core.fromParts(all.globals, { ...all.jobs, x: all.jobs[0] }), 'bad_field', 'parts.jobs.x');
  throwsWith(() => Core.fromParts(all.globals, { ...all.jobs, 2: '{"def":' }), 'bad_field', 'parts.jobs.2');
  const newer = { ...JSON.parse(all.globals), format: 10000 };
  throwsWith(() => Core.fromParts(newer, all.jobs), 'newer_format', 'parts');
  throwsWith(() => Core.fromParts(42, all.jobs), 'bad_field', 'parts.globals');
});
