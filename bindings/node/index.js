// The duetime core for Node.js. `core.step(now, event)` changes the state and returns the
// effects for the host to carry out. Values cross as plain objects in the wire format
// (docs/wire-format.md in the repository): method names are camelCase, the data keeps the
// wire's snake_case keys; times are integer milliseconds. The native module answers
// through the same Rust code as `duetime core --stdio` and the Python package.
'use strict';
const { NativeCore, wireVersion } = require('./duetime.node');

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

class Core {
  /** An empty state with `config` (absent: the default, a 30 s tick). */
  constructor(config) {
    this._native = new NativeCore();
    if (config !== undefined && config !== null) this._ask({ op: 'new', config });
  }

  /** A core holding a state `toJSON()` gave (text, or the object it parses to). */
  static fromJSON(state) {
    const core = new Core();
    const text = typeof state === 'string' ? state : JSON.stringify(state);
    core._call(`{"op":"load","state":${text}}`);
    return core;
  }

  /** The state, as the text to store (exact: no number goes through a JS double). */
  toJSON() {
    const answer = this._native.handle('{"op":"save"}');
    if (!answer.startsWith(SAVED)) throw new DuetimeError(JSON.parse(answer).error);
    return answer.slice(SAVED.length, -1);
  }

  /** Feeds one event with the time the process read ({wall, mono}); the effects, in order. */
  step(now, event) {
    return this._ask({ op: 'step', now, event }).effects;
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

  /** One wire-format request line answered with its answer line, as text. */
  request(line) {
    return this._native.handle(line);
  }

  _ask(request) {
    return this._call(JSON.stringify(request));
  }

  _call(line) {
    const answer = JSON.parse(this._native.handle(line));
    if (!answer.ok) throw new DuetimeError(answer.error);
    return answer;
  }
}

module.exports = { Core, DuetimeError, WIRE_VERSION: wireVersion() };
