// Issue 48's findings, as a Node developer met them: the README's snippet runs, a value
// JSON cannot carry is a DuetimeError naming its field, a stored state's errors are placed
// in its own text, and a refused command is visible on the step's answer.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Core, DuetimeError } = require(process.env.DUETIME_PACKAGE || '..');

const T = 1750000020000;
const every = (name, period) => ({ name, schedule: { kind: 'every', period, offset: 0 } });
const upsert = (core, def) => core.step({ wall: T, mono: 0 }, { event: 'upsert', def, actor: 'me' });
const throwsWith = (f, kind, field, message) =>
  assert.throws(f, (e) => e instanceof DuetimeError && e.kind === kind && e.field === field
    && (!message || message.test(e.message)));

test('finding 2: the README snippet runs as written', () => {
  const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
  // The first snippet, then the one reading replies (wire version 2), in one scope.
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.match(blocks[1], /e\.outcome === 'done'/);
  const snippet = blocks.slice(0, 2).join('\n').replace("require('duetime')", "require('..')");
  // (A function of its own scope, with the test's require so '..' is this package.)
  new Function('require', snippet)(require);
});

test('finding 7: a BigInt or a circular object is a DuetimeError naming the field', () => {
  const core = new Core();
  throwsWith(() => core.step({ wall: 10n, mono: 0 }, { event: 'tick', process: 1, held: [] }), 'bad_field', 'now.wall', /bigint/);
  const held = [{ run: 1, fence: 2n }];
  throwsWith(() => core.step({ wall: T, mono: 0 }, { event: 'tick', process: 1, held }), 'bad_field', 'event.held[0].fence');
  const def = every('loop', 60000);
  def.self = def;
  throwsWith(() => upsert(core, def), 'bad_field', 'event.def.self', /circular/);
});

test("finding 7: a stored state's errors are placed in its own text; bytes and objects load", () => {
  throwsWith(() => Core.fromJSON(''), 'bad_field', 'state', /column 0 \(of the state's text\)/);
  throwsWith(() => Core.fromJSON(null), 'bad_field', 'state', /accepted/);
  const core = new Core();
  upsert(core, every('hello', 60000));
  const text = core.toJSON();
  assert.equal(Core.fromJSON(Buffer.from(text)).toJSON(), text);
  assert.equal(Core.fromJSON(JSON.parse(text)).toJSON(), text);
});

test('finding 8: a refused upsert is named on the step itself, not only in a reply', () => {
  const core = new Core();
  const refused = upsert(core, every('fast', 10000));
  assert.equal(refused.refused.refusal, 'invalid');
  assert.equal(refused.refused.error.error, 'every_shorter_than_tick');
  const taken = upsert(core, every('slow', 60000));
  assert.equal(taken.refused, null);
  assert.equal(taken.at(-1).outcome, 'done');
  assert.equal(taken.at(-1).view.name, 'slow');
  // The property does not show in the array's JSON or its comparison.
  assert.equal(JSON.stringify(refused), JSON.stringify([...refused]));
});

test('finding 5: every config field may be left out', () => {
  const core = new Core({ tick: 5000 });
  assert.equal(JSON.parse(core.toJSON()).config.tick, 5000);
});
