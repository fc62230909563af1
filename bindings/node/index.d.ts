// TypeScript declarations of the duetime Node package. Values are the wire format's
// (docs/wire-format.md): times are integer milliseconds since the epoch, keys snake_case,
// tagged objects carry their tag. The wire's types (Event, EffectV2, JobDef, JobView,
// LedgerEntry, Refusal, ...: discriminated unions on their tags) are generated from its JSON
// Schema into wire.d.ts (scripts/gen-types.js) and exported from here too. The package
// speaks wire version 2: `step` gives `EffectV2`s, a reply tagged by `outcome` (`Effect`
// is version 1's, for lines sent raw with `request`).

import type { ConfigIn, EffectV2, Event, JobView, Now, Refusal } from './wire';
export * from './wire';

export interface JobsFilter {
  status?: JobView['status'];
  name_prefix?: string;
}

export interface Page {
  items: JobView[];
  next?: string;
}

/** The refusal of a request: kind, the field at fault, what was wrong and what is accepted. */
export interface WireError {
  kind: 'bad_line' | 'unknown_op' | 'unknown_wire_version' | 'bad_field' | 'newer_format' | 'inconsistent_state';
  field?: string;
  message: string;
}

export class DuetimeError extends Error {
  readonly kind: WireError['kind'];
  readonly field: string | null;
  readonly error: WireError;
}

/** A step's effects (wire version 2); `refused` holds the refusal of the command the event carried, if the core refused it. */
export interface Effects extends Array<EffectV2> {
  readonly refused: Refusal | null;
}

/** State parts, each the text to store: the globals, and records by sequence number (null: removed). */
export interface Parts {
  globals: string;
  jobs: Record<string, string | null>;
}

type Part = string | Uint8Array | object;
type PartsOfJobs = Record<string, Part | null> | Map<number | string, Part | null> | Array<[number | string, Part | null]>;

export class Core {
  constructor(config?: ConfigIn);
  static fromJSON(state: string | Uint8Array | object): Core;
  static fromParts(globals: Part, jobs: PartsOfJobs): Core;
  toJSON(): string;
  step(now: Now, event: Event): Effects;
  trackChanges(on?: boolean): void;
  takeParts(): Parts;
  saveParts(): Parts;
  putParts(globals: Part, jobs: PartsOfJobs): void;
  nextWake(): number | null;
  nextWakeFor(process: number): number | null;
  job(name: string, now?: number): JobView | null;
  jobs(filter?: JobsFilter, options?: { after?: string; limit?: number; now?: number }): Page;
  /** A raw request line answered in the wire version it names (none: version 1). */
  request(line: string): string;
}

/** The wire version the package's API speaks (2). */
export const WIRE_VERSION: number;
