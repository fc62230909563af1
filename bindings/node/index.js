// The duetime core for Node.js. `core.step(now, event)` changes the state and returns the
// effects for the host to carry out. Values cross as plain objects in the wire format
// (docs/wire-format.md in the repository): method names are camelCase, the data keeps the
// wire's snake_case keys; times are integer milliseconds. The native module answers
// through the same Rust code as `duetime core --stdio` and the Python package.
'use strict';
const { NativeCore } = require('./duetime.node');

/**
 * The wire version this package's API speaks: every line it sends names it, so a command's
 * reply is tagged by `outcome` (`done` with `view`, `refused` with `refusal`), not Rust's
 * `Ok`/`Err` (docs/wire-format.md, "Wire versions"). Fixed here, not taken from the native
 * core, so a newer core never changes what this code reads. `core.request(line)` answers
 * in the version the line names (none: version 1).
 */
const WIRE = 2;

/** A request the core refused: `kind`, `field` (the path at fault, if any), `message`. */
class DuetimeError extends Error {
  constructor(error) {
    super(`${error.kind}: ${error.field ? `${error.field}: ` : ''}${error.message}`);
    this.name = 'DuetimeError';
    this.kind = error.kind;
    this.field = error.field ?? null;
    this.error = error;
  }
}

const SAVED = '{"ok":true,"state":';

/**
 * The first value under `value` that JSON cannot carry (a BigInt, a symbol, a function, a
 * circular reference), as `{field, what}` with its path as the wire names paths
 * (`now.wall`, `event.held[0].fence`), or null. `JSON.stringify` throws a bare TypeError
 * for these (issue 48); the host gets a `DuetimeError` naming the field instead.
 */
function unsendable(value, path = '', seen = new Set()) {
  const kind = typeof value;
  if (kind === 'bigint' || kind === 'symbol' || kind === 'function') return { field: path, what: `a ${kind}` };
  if (value === null || kind !== 'object' || typeof value.toJSON === 'function') return null;
  if (seen.has(value)) return { field: path, what: 'a circular reference' };
  seen.add(value);
  const entries = Array.isArray(value) ? value.entries() : Object.entries(value);
  for (const [key, child] of entries) {
    const at = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    const found = unsendable(child, at, seen);
    if (found) return found;
  }
  seen.delete(value);
  return null;
}

/** `request` as one wire line, or a `DuetimeError` naming what JSON cannot carry. */
function toLine(request) {
  const found = unsendable(request);
  if (found) {
    throw new DuetimeError({
      kind: 'bad_field',
      field: found.field,
      message: `${found.what} cannot be sent: accepted are JSON values (numbers: integer milliseconds, exact to 2^53; for more digits send the line yourself with core.request)`,
    });
  }
  return JSON.stringify(request);
}

/** A stored state as text: a string, a Buffer or Uint8Array (UTF-8), or the parsed object. */
function stateText(state) {
  if (typeof state === 'string') return state;
  if (state instanceof Uint8Array) return Buffer.from(state).toString('utf8');
  if (state !== null && typeof state === 'object') return toLine(state);
  throw new DuetimeError({
    kind: 'bad_field',
    field: 'state',
    message: `the stored state is ${state === null ? 'null' : `a ${typeof state}`}; accepted: the text toJSON() gave (a string or Buffer), or the object it parses to`,
  });
}

/** The native module's flat parts (`[null, globals, seq, record, ...]` or `[error]`). */
function parts(flat) {
  if (flat[0] !== null) throw new DuetimeError(JSON.parse(flat[0]).error);
  const jobs = {};
  for (let i = 2; i < flat.length; i += 2) jobs[flat[i]] = flat[i + 1];
  return { globals: flat[1], jobs };
}

/** A stored part as text: a string, a Buffer, or the object it parses to. */
function partText(part, field) {
  if (typeof part === 'string') return part;
  if (part instanceof Uint8Array) return Buffer.from(part).toString('utf8');
  if (part !== null && typeof part === 'object') return toLine(part);
  throw new DuetimeError({ kind: 'bad_field', field, message: `a ${typeof part}; accepted: the text takeParts() or saveParts() gave, or the object it parses to` });
}

class Core {
  /** An empty state with `config` (absent: the default, a 30 s tick). */
  constructor(config) {
    this._native = new NativeCore();
    if (config !== undefined && config !== null) this._ask({ op: 'new', config });
  }

  /** A core holding a state `toJSON()` gave (text, or the object it parses to). */
  static fromJSON(state) {
    const core = new Core();
    // Loaded from its own text, so a decode error is placed in it (not in a wrapping line).
    const answer = JSON.parse(core._native.loadText(stateText(state)));
    if (!answer.ok) throw new DuetimeError(answer.error);
    return core;
  }

  /** The state, as the text to store (exact: no number goes through a JS double). */
  toJSON() {
    const answer = this._native.handle('{"op":"save"}');
    if (!answer.startsWith(SAVED)) throw new DuetimeError(JSON.parse(answer).error);
    return answer.slice(SAVED.length, -1);
  }

  /**
   * Feeds one event with the time the process read ({wall, mono}); the effects, in order.
   * A command's `reply` effect is tagged by `outcome`: `done` with the job's `view`, or
   * `refused` with the `refusal`. When the core refused the command the event carried (an
   * invalid definition, a pause of a job that does not exist), the array's `refused`
   * property holds the refusal too; it is null otherwise. Not an exception: the step may
   * still have written journal lines to keep.
   */
  step(now, event) {
    const answer = this._ask({ op: 'step', now, event });
    Object.defineProperty(answer.effects, 'refused', { value: answer.refused ?? null, enumerable: false });
    return answer.effects;
  }

  /** The earliest instant a tick can change anything, or null. */
  nextWake() {
    return this._ask({ op: 'next_wake' }).wake;
  }

  /** When `process`'s next tick can matter, by its own clock, or null. */
  nextWakeFor(process) {
    return this._ask({ op: 'next_wake_for', process }).wake;
  }

  /** One job's view as of `now` (default: the store's clock), or null. */
  job(name, now) {
    return this._ask({ op: 'job', name, now }).job;
  }

  /** A page of views, attention first: {items, next?}; filter {status?, name_prefix?}. */
  jobs(filter, { after, limit, now } = {}) {
    return this._ask({ op: 'jobs', filter, after, limit, now }).page;
  }

  /**
   * Notes the jobs each step touches, for `takeParts()` (off in a new or loaded core).
   * A store keeping a row per job turns it on once, stores `saveParts()` whole, then after
   * each step writes what `takeParts()` gives: bytes in proportion to what changed.
   */
  trackChanges(on = true) {
    this._native.trackChanges(Boolean(on));
  }

  /**
   * The jobs touched since the last call, and the globals, each the text to store:
   * `{ globals, jobs: { [seq]: text | null } }` (null: removed). Throws while changes are
   * not tracked (an empty answer would let a store fall behind without a word).
   */
  takeParts() {
    return parts(this._native.parts(false));
  }

  /** Every job's record and the globals, as `takeParts()` gives them: the whole state. */
  saveParts() {
    return parts(this._native.parts(true));
  }

  /**
   * A core holding the state stored as parts: `globals` (text or object) and `jobs`, each
   * job's record by sequence number (an object or Map of text or objects, or [seq, record]
   * pairs).
   */
  static fromParts(globals, jobs) {
    const core = new Core();
    core._putParts(true, globals, jobs);
    return core;
  }

  /** Brings this core up to date with parts another process stored (null: a job removed). */
  putParts(globals, jobs) {
    this._putParts(false, globals, jobs);
  }

  _putParts(load, globals, jobs) {
    const seqs = [];
    const records = [];
    const pairs = jobs instanceof Map || Array.isArray(jobs) ? jobs : Object.entries(jobs ?? {});
    for (const [seq, record] of pairs) {
      seqs.push(String(seq));
      records.push(record === null || record === undefined ? null : partText(record, `parts.jobs.${seq}`));
    }
    const answer = JSON.parse(this._native.putParts(load, partText(globals, 'parts.globals'), seqs, records));
    if (!answer.ok) throw new DuetimeError(answer.error);
  }

  /**
   * One wire-format request line answered with its answer line, as text, in the wire
   * version the line names: a line without `wire` is version 1 (replies as `result` with
   * `Ok`/`Err`), one with `"wire":2` is answered as the rest of this API reads it.
   */
  request(line) {
    return this._native.handle(line);
  }

  _ask(request) {
    return this._call(toLine({ ...request, wire: WIRE }));
  }

  _call(line) {
    const answer = JSON.parse(this._native.handle(line));
    if (!answer.ok) throw new DuetimeError(answer.error);
    return answer;
  }
}

module.exports = { Core, DuetimeError, WIRE_VERSION: WIRE };
