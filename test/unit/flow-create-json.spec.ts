import { DEFAULT_FLOW_BOUNDS } from '../../src/queue/flows/flow-types.js';
import { createJson, encodeFlow, planQueue, writtenEntries } from '../../src/queue/flows/flow-plan.js';
import { createOf, parseCreate } from '../../src/queue/flows/flow-entries.js';
import type { FlowSpec } from '../../src/queue/flows/flow-types.js';
import type { Json } from '../../src/core/codec.js';

let n = 0;
const mint = (): string => `job_${(n++).toString(36).padStart(8, '0')}`;
const tree = (spec: FlowSpec) => encodeFlow(spec as FlowSpec<unknown>, DEFAULT_FLOW_BOUNDS, () => 1e6, mint);

describe('creation entry JSON', () => {
  const payloads: Json[] = [{ f: 1 }, 'x"\\\n\u2028é', null, [1, { a: '</script>' }], 0, true];
  const options: Partial<FlowSpec>[] = [{}, { attempts: 3 }, { backoff: { type: 'fixed', delayMs: 10 } }, { delay: 5 }, { priority: 2 }, { lane: 'g1' }, { key: 'k.y-1' }, { onFailure: 'ignore' }];
  it('spells exactly what JSON.stringify gives, leaves with and without options and subtrees alike', () => {
    for (const payload of payloads) {
      for (const o of options) {
        const t = tree({ queue: 'p', payload: 1, children: [{ queue: 'c', payload, ...o }, { queue: 'c', payload, children: [{ queue: 'd', payload, ...o }] }] });
        for (const k of t.kids) {
          const c = { up: `p ${t.id}`, tree: k };
          expect(createJson(c)).toBe(JSON.stringify(c));
        }
      }
    }
  });

  it('an entry this process wrote carries the content its text decodes to', () => {
    const t = tree({ queue: 'p', payload: { a: 1 }, children: [{ queue: 'c', payload: 'x', attempts: 2 }, { queue: 'c', payload: null }] });
    const es = writtenEntries(planQueue('p', [{ tree: t, up: '' }]), [1]);
    expect(es).toHaveLength(2);
    for (const e of es) {
      const decoded = parseCreate(e.text);
      expect(createOf(e)).toEqual({ queue: 'c', entry: expect.objectContaining({ up: `p ${t.id}` }) });
      expect(JSON.parse(JSON.stringify(createOf(e)))).toEqual(decoded);
      expect(createOf({ id: e.id, text: e.text })).toEqual(decoded);
    }
  });
});
