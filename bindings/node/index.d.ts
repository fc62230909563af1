// TypeScript declarations of the duetime Node package. Values are the wire format's
// (docs/wire-format.md; the JSON Schema is docs/wire-format.schema.json): times are integer
// milliseconds since the epoch, keys snake_case, tagged objects carry their tag.

/** What the process read from its clocks. */
export interface Now {
  wall: number;
  mono: number;
  boot?: number;
}

/** An event, tagged by `event`: {event: 'tick', process: 1, held: []}, ... */
export type Event = { event: string; [field: string]: unknown };

/** An effect, tagged by `effect`: 'start' | 'cancel' | 'record' | 'clock_gap' | 'alert' | 'reply' | 'owner' | 'owner_released' | 'drained'. */
export type Effect = { effect: string; [field: string]: unknown };

export interface JobView {
  name: string;
  title: string;
  schedule: string;
  status: 'failed' | 'stalled' | 'missed' | 'paused' | 'running' | 'ok' | 'no_run';
  next_due: number | null;
  settled_through: number;
  [field: string]: unknown;
}

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
  kind: 'bad_line' | 'unknown_op' | 'bad_field' | 'newer_format' | 'inconsistent_state';
  field?: string;
  message: string;
}

export class DuetimeError extends Error {
  readonly kind: WireError['kind'];
  readonly field: string | null;
  readonly error: WireError;
}

export class Core {
  constructor(config?: Record<string, unknown>);
  static fromJSON(state: string | object): Core;
  toJSON(): string;
  step(now: Now, event: Event): Effect[];
  nextWake(): number | null;
  nextWakeFor(process: number): number | null;
  job(name: string, now?: number): JobView | null;
  jobs(filter?: JobsFilter, options?: { after?: string; limit?: number; now?: number }): Page;
  request(line: string): string;
}

export const WIRE_VERSION: number;
