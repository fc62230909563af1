// wire.d.ts is what scripts/gen-types.js makes of the wire's JSON Schema (issue 48, item 5):
// regenerate with `node scripts/gen-types.js > wire.d.ts` after the schema changes. CI also
// compiles examples/typed.ts against it with `tsc --strict`.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { generate, SCHEMA } = require('../scripts/gen-types.js');

test('wire.d.ts is generated from the schema as checked in', () => {
  const want = generate(JSON.parse(fs.readFileSync(SCHEMA, 'utf8')));
  const have = fs.readFileSync(path.join(__dirname, '..', 'wire.d.ts'), 'utf8');
  assert.ok(have === want, 'wire.d.ts is stale: node scripts/gen-types.js > wire.d.ts');
});

test('every tagged type of the wire is a discriminated union by its tag', () => {
  const have = fs.readFileSync(path.join(__dirname, '..', 'wire.d.ts'), 'utf8');
  for (const [type, tag, variant] of [['Event', 'event', 'tick'], ['Effect', 'effect', 'start'], ['LedgerEntry', 'kind', 'missed'], ['Refusal', 'refusal', 'not_found']]) {
    const body = have.split(`export type ${type} = `)[1].split('\nexport type ')[0];
    assert.ok(body.includes(`${tag}: "${variant}";`), `${type} has no ${tag}: "${variant}" variant`);
  }
});
