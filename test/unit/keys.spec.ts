import { EchoMqError } from '../../src/index.js';
import { InvalidNameError } from '../../src/core/errors.js';
import { MAX_NAME_LENGTH, QueueKeys, assertName, crc16, encodeBody, globalKeys, keySlot, queueKeys } from '../../src/protocol.js';

const KINDS = ['meta', 'pending', 'scheduled', 'active', 'done', 'dead', 'cancelled', 'wake'] as const;
const ID = 'job' + encodeBody(987654321n);

/** The EchoMqError `fn` throws (fails the test if it throws anything else, or nothing). */
function errorOf(fn: () => unknown): EchoMqError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EchoMqError);
    return err as EchoMqError;
  }
  throw new Error('expected a throw');
}

describe('the key grammar', () => {
  it('spells every queue key emq:{<q>}:<kind>', () => {
    const k = queueKeys('orders');
    for (const kind of KINDS) expect(k[kind]).toBe(`emq:{orders}:${kind}`);
    // every key the class spells (including kinds added later) follows the grammar
    const spelt = (Object.entries(k) as [string, unknown][]).filter(([field]) => field !== 'queue' && field !== 'jobPrefix');
    expect(spelt.length).toBeGreaterThanOrEqual(KINDS.length);
    for (const [field, key] of spelt) expect(key).toBe(`emq:{orders}:${field}`);
    expect(k.jobPrefix).toBe('emq:{orders}:job:');
    expect([k.pendingAt(0), k.pendingAt(9)]).toEqual(['emq:{orders}:pending', 'emq:{orders}:pending:9']);
    expect(k.queue).toBe('orders');
  });

  it('spells a job row emq:{<q>}:job:<id>', () => {
    expect(queueKeys('orders').job(ID)).toBe(`emq:{orders}:job:${ID}`);
    expect(new QueueKeys('a.b-c_D9').job(ID)).toBe(`emq:{a.b-c_D9}:job:${ID}`);
  });

  it('refuses a malformed id for a job row with EMQ_BAD_ID', () => {
    const k = queueKeys('orders');
    for (const bad of ['', 'job', `${ID}x`, `evt${ID.slice(3)}`, 'job0000000000:', 'job*0000000000'.slice(0, 14)]) {
      expect(errorOf(() => k.job(bad)).code).toBe('EMQ_BAD_ID');
    }
  });

  it('gives the same keys on every call (memoised) and separate keys per queue', () => {
    expect(queueKeys('same')).toBe(queueKeys('same'));
    expect(queueKeys('one').pending).not.toBe(queueKeys('two').pending);
  });

  it('keeps the global keys under the {emq} tag', () => {
    expect(globalKeys.nodeSeq).toBe('{emq}:node-seq');
    expect(globalKeys.nodes).toBe('{emq}:nodes');
    expect(keySlot(globalKeys.nodeSeq)).toBe(keySlot(globalKeys.nodes));
  });
});

describe('hostile names', () => {
  const hostile: [string, unknown][] = [
    ['open brace', 'a{b'],
    ['close brace', 'a}b'],
    ['only a brace', '{'],
    ['colon', 'a:b'],
    ['star', 'a*'],
    ['question mark', 'a?'],
    ['newline', 'a\nb'],
    ['carriage return', 'a\r'],
    ['space', 'a b'],
    ['tab', '\t'],
    ['empty', ''],
    ['101 characters', 'x'.repeat(MAX_NAME_LENGTH + 1)],
    ['10k characters', 'x'.repeat(10_000)],
    ['non-ASCII', 'ordérs'],
    ['slash', 'a/b'],
    ['the path segment "."', '.'],
    ['the path segment ".."', '..'],
    ['number', 42],
    ['null', null],
    ['undefined', undefined],
    ['object', { toString: () => 'orders' }],
    ['array', ['orders']],
  ];

  it.each(hostile)('refuses %s with InvalidNameError (EMQ_BAD_NAME)', (_what, name) => {
    const viaAssert = errorOf(() => assertName(name));
    expect(viaAssert).toBeInstanceOf(InvalidNameError);
    expect(viaAssert.code).toBe('EMQ_BAD_NAME');
    expect(errorOf(() => queueKeys(name as string)).code).toBe('EMQ_BAD_NAME');
    expect(errorOf(() => new QueueKeys(name as string)).code).toBe('EMQ_BAD_NAME');
  });

  it('refuses a hostile name every time (a refusal is never memoised into a key set)', () => {
    for (let i = 0; i < 3; i++) expect(errorOf(() => queueKeys('x{y}')).code).toBe('EMQ_BAD_NAME');
  });

  it('accepts the legal alphabet up to exactly 100 characters', () => {
    expect(MAX_NAME_LENGTH).toBe(100);
    for (const ok of ['a', 'A-Z_a.z-0', '0', 'x'.repeat(100), '...', '-_-']) {
      expect(() => assertName(ok)).not.toThrow();
      expect(queueKeys(ok).meta).toBe(`emq:{${ok}}:meta`);
    }
  });

  it('names what was refused in the message', () => {
    expect(errorOf(() => assertName('', 'topic')).message).toContain('topic');
  });
});

describe('CRC16 and cluster slots', () => {
  it('matches the CRC16/XMODEM check value', () => {
    expect(crc16('123456789')).toBe(12739);
    expect(crc16(Buffer.from('123456789'))).toBe(12739);
    expect(crc16('')).toBe(0);
  });

  it('matches the reference slots', () => {
    expect(keySlot('emq:{orders}:pending')).toBe(105);
    expect(keySlot('emq:{fills}:pending')).toBe(4165);
    expect(keySlot('emq:{payments}:pending')).toBe(8507);
    expect(keySlot('123456789')).toBe(12739);
    // Valkey's documented examples: tags make these share one slot
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
  });

  it('hashes only the first non-empty {tag}, and the whole key when the tag is empty or unclosed', () => {
    expect(keySlot('foo{bar}{zap}')).toBe(crc16('bar') % 16384);
    expect(keySlot('foo{}{bar}')).toBe(crc16('foo{}{bar}') % 16384);
    expect(keySlot('foo{{bar}}zap')).toBe(crc16('{bar') % 16384);
    expect(keySlot('foo{bar')).toBe(crc16('foo{bar') % 16384);
  });

  it('puts every key of one queue in one slot', () => {
    for (const q of ['orders', 'fills', 'payments', 'x'.repeat(100), 'a.b-c_d']) {
      const k = queueKeys(q);
      const spelt = (Object.values(k) as unknown[]).filter((v): v is string => typeof v === 'string' && v !== q);
      const all = [...spelt, k.jobPrefix, k.job(ID), k.job('jobLygHa16AHYF')];
      expect(all.length).toBeGreaterThan(KINDS.length);
      const slots = new Set(all.map(keySlot));
      expect(slots).toEqual(new Set([crc16(q) % 16384]));
    }
  });
});
