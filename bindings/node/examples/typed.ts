// The package from TypeScript, checked with `tsc --strict` (issue 48, item 5): the wire's
// types narrow by their tags, so a host's switch over effects and ledger lines is checked.
import { Core } from '..';
import type { EffectV2, Event, JobDef, LedgerEntry, Now } from '..';

const now = (): Now => ({ wall: Date.now(), mono: Math.round(performance.now()) });
const core = new Core({ tick: 5000 });
const def: JobDef = { name: 'hello', schedule: { kind: 'every', period: 60000, offset: 0 } };
const upsert: Event = { event: 'upsert', def, actor: 'me' };
const effects = core.step(now(), upsert);
if (effects.refused) throw new Error(`not defined: ${effects.refused.refusal}`);
core.step(now(), { event: 'process_started', process: 1 });

function fate(entry: LedgerEntry): string {
  switch (entry.kind) {
    case 'ran': return `ran by run ${entry.run}`;
    case 'missed': return `missed (${entry.cause})`;
    default: return entry.kind;
  }
}

function carryOut(e: EffectV2): void {
  switch (e.effect) {
    case 'start':
      console.log(`start run ${e.run} of ${e.job} under fence ${e.fence}`);
      break;
    case 'record':
      if (e.entry.type === 'ledger') console.log(e.job, fate(e.entry));
      break;
    case 'reply':
      if (e.outcome === 'refused') console.log('refused:', e.refusal.refusal);
      else console.log('done:', e.view?.status ?? 'no view');
      break;
    default:
      console.log(e.effect);
  }
}

core.step(now(), { event: 'tick', process: 1, held: [] }).forEach(carryOut);
const view = core.job('hello');
if (view) console.log(view.status, view.next_due);
