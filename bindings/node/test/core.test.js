// The Node package: the Core surface, errors as exceptions, and the conformance replay of
// the worlds kept in tests/wire/ (byte-identical to the Rust core's answers), in wire
// version 1 (raw lines) and version 2 (raw lines and the API, which speaks it).
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Core, DuetimeError, WIRE_VERSION } = require(process.env.DUETIME_PACKAGE || '..');

const WIRE = path.join(__dirname, '..', '..', '..', 'tests', 'wire');
const T = 1750000020000;
const JOB = { name: 'hello', schedule: { kind: 'every', period: 60000, offset: 0 } };
const upsert = (core, def = JOB) =>
  core.step({ wall: T, mono: 0 }, { event: 'upsert', def, actor: 'me' });

test('a job runs on its grid and the reads show it', () => {
  const core = new Core();
  const reply = upsert(core).at(-1);
  assert.equal(reply.effect, 'reply');
  assert.equal(reply.outcome, 'done');
  assert.equal(reply.view.name, 'hello');
  assert.equal(reply.job, 'hello');
  assert.equal('result' in reply, false, 'no Rust Ok/Err keys');
  assert.equal(core.nextWake(), T + 60000);
  const effects = core.step({ wall: T + 60000, mono: 60000 }, { event: 'process_started', process: 1 });
  const starts = effects.filter((e) => e.effect === 'start').map((e) => [e.job, e.run, e.process]);
  assert.deepEqual(starts, [['hello', 1, 1]]);
  assert.equal(core.job('hello').status, 'running');
  assert.equal(core.job('other'), null);
  assert.deepEqual(core.jobs({ status: 'running' }, { limit: 10 }).items.map((v) => v.name), ['hello']);
  assert.deepEqual(core.jobs({ name_prefix: 'x' }).items, []);
  assert.notEqual(core.nextWakeFor(1), null);
  assert.equal(WIRE_VERSION, 2);
});

test('toJSON and fromJSON round-trip the state', () => {
  const core = new Core();
  upsert(core);
  const text = core.toJSON();
  assert.equal(Core.fromJSON(text).toJSON(), text);
  assert.equal(Core.fromJSON(JSON.parse(text)).toJSON(), text);
  assert.equal(JSON.parse(text).jobs['0'].def.name, 'hello');
});

test('bad input throws the typed error naming the field', () => {
  const core = new Core();
  const throwsWith = (f, kind, field) =>
    assert.throws(f, (e) => e instanceof DuetimeError && e.kind === kind && e.field === field);
  throwsWith(() => core.step({ wall: T, mono: 0 }, { event: 'tick', process: 'p1', held: [] }), 'bad_field', 'event.process');
  throwsWith(() => upsert(core, { ...JOB, schedule: { kind: 'cron', expr: '61 * * * *' } }), 'bad_field', 'event.def.schedule.expr');
  throwsWith(() => core.step({ wall: 'now', mono: 0 }, { event: 'tick', process: 1, held: [] }), 'bad_field', 'now.wall');
  throwsWith(() => core.job('hello'), 'bad_field', 'now');
  const state = JSON.parse(new Core().toJSON());
  state.format = 10000;
  throwsWith(() => Core.fromJSON(state), 'newer_format', 'state');
});

test('a refused command is a reply effect, not an exception', () => {
  const effects = new Core().step({ wall: T, mono: 0 }, { event: 'pause', job: 'nope', actor: 'me', note: '' });
  assert.deepEqual(effects.at(-1), { effect: 'reply', outcome: 'refused', job: null, refusal: { refusal: 'not_found', job: 'nope' } });
  assert.deepEqual(effects.refused, { refusal: 'not_found', job: 'nope' });
});

test('a raw line is answered in the wire version it names: none is version 1', () => {
  const core = new Core();
  const pause = { op: 'step', now: { wall: T, mono: 0 }, event: { event: 'pause', job: 'nope', actor: 'me', note: '' } };
  const v1 = JSON.parse(core.request(JSON.stringify(pause)));
  assert.deepEqual(v1.effects[0].result, { Err: { refusal: 'not_found', job: 'nope' } });
  const v2 = JSON.parse(core.request(JSON.stringify({ ...pause, wire: 2 })));
  assert.equal(v2.effects[0].outcome, 'refused');
  const bad = JSON.parse(core.request(JSON.stringify({ ...pause, wire: 3 })));
  assert.equal(bad.error.kind, 'unknown_wire_version');
  assert.match(bad.error.message, /accepted: 1, 2/);
  assert.deepEqual(JSON.parse(core.request('{"op":"version"}')).version.wire_versions, [1, 2]);
});

/** Parts as the package gives them (texts), parsed as the wire's answer holds them. */
function parsedParts({ globals, jobs }) {
  const parsed = {};
  for (const [seq, record] of Object.entries(jobs)) parsed[seq] = record === null ? null : JSON.parse(record);
  return { globals: JSON.parse(globals), jobs: parsed };
}

/** A request carried out by the Core method it names, answered as the wire would. */
function throughTheApi(core, r) {
  switch (r.op) {
    case 'new': return { ok: true, replaced: new Core(r.config) };
    case 'step': {
      const effects = core.step(r.now, r.event);
      return effects.refused ? { ok: true, effects: [...effects], refused: effects.refused } : { ok: true, effects: [...effects] };
    }
    case 'track_changes': core.trackChanges(r.on); return { ok: true };
    case 'take_parts': return { ok: true, parts: parsedParts(core.takeParts()) };
    case 'save_parts': return { ok: true, parts: parsedParts(core.saveParts()) };
    case 'load_parts': return { ok: true, replaced: Core.fromParts(r.parts.globals, r.parts.jobs) };
    case 'save': return { ok: true, state: JSON.parse(core.toJSON()) };
    case 'next_wake': return { ok: true, wake: core.nextWake() };
    case 'next_wake_for': return { ok: true, wake: core.nextWakeFor(r.process) };
    case 'jobs': return { ok: true, page: core.jobs(undefined, { limit: r.limit, now: r.now }) };
    case 'job': return { ok: true, job: core.job(r.name, r.now) };
    default: throw new Error(`the fixtures hold no ${r.op}`);
  }
}

const seeds = fs.readdirSync(WIRE).filter((f) => /^seed-\d+\.requests\.jsonl$/.test(f)).map((f) => f.split('.')[0]).sort();
test('there are fixtures to replay', () => assert.ok(seeds.length >= 4, WIRE));

for (const seed of seeds) {
  test(`conformance: ${seed}, every answer the Rust core's byte for byte`, () => {
    const lines = (what) => fs.readFileSync(path.join(WIRE, `${seed}.${what}.jsonl`), 'utf8').trimEnd().split('\n');
    const [requests, answers] = [lines('requests'), lines('answers')];
    const [requestsV2, answersV2] = [lines('v2.requests'), lines('v2.answers')];
    assert.ok(requests.length === answers.length && requests.length > 100);
    assert.ok(requestsV2.length === requests.length && answersV2.length === requests.length);
    const [raw, rawV2] = [new Core(), new Core()];
    let typed = new Core();
    let differences = 0;
    requests.forEach((request, i) => {
      differences += raw.request(request) !== answers[i];
      differences += rawV2.request(requestsV2[i]) !== answersV2[i];
      // The API speaks version 2: it answers the version-1 request as version 2 does.
      const got = throughTheApi(typed, JSON.parse(request));
      if (got.replaced) {
        typed = got.replaced;
        delete got.replaced;
      }
      try {
        assert.deepStrictEqual(got, JSON.parse(answersV2[i]));
      } catch {
        differences += 1;
      }
    });
    assert.equal(differences, 0);
    assert.equal(typed.toJSON(), raw.toJSON());
  });
}
