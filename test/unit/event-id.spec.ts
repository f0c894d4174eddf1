import { EVENT_NS, ID_EPOCH_MS, composeId, eventIdOf, eventInstant, isBrandedId, streamIdOf } from '../../src/protocol.js';
import { compareStreamIds } from '../../src/core/stream-id.js';
import { codeOf, prngUnit as prng } from '../helpers/units.js';

const LOW = 2 ** 22;

describe('event ids', () => {
  it('round-trips stream ids at the edges of the range', () => {
    const maxMs = ID_EPOCH_MS + 2 ** 42 - 1;
    for (const sid of [`${ID_EPOCH_MS}-0`, `${ID_EPOCH_MS}-${LOW - 1}`, '1795947512131-0', '1795947512131-4095', '1795947512131-4096', `${maxMs}-${LOW - 1}`]) {
      const evt = eventIdOf(sid);
      expect(evt).toMatch(/^evt[0-9A-Za-z]{11}$/);
      expect(isBrandedId(evt, EVENT_NS)).toBe(true);
      expect(streamIdOf(evt)).toBe(sid);
      expect(eventInstant(evt)).toBe(Number(sid.split('-')[0]));
    }
    expect(eventIdOf(`${maxMs}-${LOW - 1}`)).toBe('evtLygHa16AHYF');
  });

  it('byte order of event ids equals stream order (property, 2000 random pairs)', () => {
    const rnd = prng(42);
    const sid = (): string => `${ID_EPOCH_MS + Math.floor(rnd() * 2 ** 40)}-${rnd() < 0.3 ? 0 : Math.floor(rnd() * LOW)}`;
    for (let i = 0; i < 2000; i++) {
      const a = sid();
      const b = rnd() < 0.2 ? `${a.split('-')[0]}-${Math.floor(rnd() * LOW)}` : sid();
      const ea = eventIdOf(a);
      const eb = eventIdOf(b);
      expect(Math.sign(ea < eb ? -1 : ea > eb ? 1 : 0)).toBe(Math.sign(compareStreamIds(a, b)));
      expect(streamIdOf(ea)).toBe(a);
    }
  });

  it('shares the layout of every branded id (seq split into node and sequence bits)', () => {
    expect(eventIdOf('1795947512131-5000')).toBe(composeId(EVENT_NS, { ms: 1795947512131, node: 1, seq: 5000 - 4096 }));
  });

  it('refuses stream ids that have no branded form', () => {
    for (const bad of [`${ID_EPOCH_MS}-${LOW}`, '1795947512131-99999999999', `${ID_EPOCH_MS - 1}-0`, '12-', '-1', 'x-1', '1795947512131', '', '1795947512131--1']) {
      expect({ bad, code: codeOf(() => eventIdOf(bad)) }).toEqual({ bad, code: 'EMQ_BAD_ID' });
    }
  });

  it('refuses malformed event ids and ids of other namespaces', () => {
    for (const bad of ['', 'evt', 'evt0000000000', 'evt000000000000', 'job0IfYLyNaKuG', 'evt0IfYLyNaKu!', 'evtLygHa16AHYG', 'EVT0IfYLyNaKuG']) {
      expect({ bad, code: codeOf(() => streamIdOf(bad)) }).toEqual({ bad, code: 'EMQ_BAD_ID' });
    }
  });
});
