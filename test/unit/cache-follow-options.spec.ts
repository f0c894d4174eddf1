import { EchoMqModule, type CacheInvalidationRule } from '../../src/index.js';
import { resolveInvalidationRules } from '../../src/follow/cache-follower.js';

// Issue 14: cache.invalidateOn is checked at forRoot, before any I/O.
const tags = () => ['t'];
const forRoot = (invalidateOn: unknown) => () => EchoMqModule.forRoot({ connection: { port: 1 }, cache: { invalidateOn: invalidateOn as CacheInvalidationRule[] } });
const code = (c: string) => expect.objectContaining({ code: c });

describe('cache.invalidateOn rules', () => {
  it('resolves the namespace (the cache default) and the group (cache.<namespace>)', () => {
    const [a, b] = resolveInvalidationRules([{ topic: 'products', tags }, { topic: 'products', namespace: 'quotes', keys: tags }], 'shop');
    expect([a.namespace, a.group, b.namespace, b.group]).toEqual(['shop', 'cache.shop', 'quotes', 'cache.quotes']);
    expect(resolveInvalidationRules(undefined, 'x')).toEqual([]);
  });

  it.each([
    ['not an array', { topic: 'p', tags }, 'EMQ_BAD_OPTION'],
    ['an unknown key', [{ topic: 'p', tags, ttl: 5 }], 'EMQ_BAD_OPTION'],
    ['a bad topic', [{ topic: 'has space', tags }], 'EMQ_BAD_NAME'],
    ['a bad namespace', [{ topic: 'p', namespace: 'a{b}', tags }], 'EMQ_BAD_NAME'],
    ['neither tags nor keys', [{ topic: 'p' }], 'EMQ_BAD_OPTION'],
    ['tags that are not a function', [{ topic: 'p', tags: ['t'] }], 'EMQ_BAD_OPTION'],
    ['a bad group option', [{ topic: 'p', tags, maxDeliveries: 0 }], 'EMQ_BAD_OPTION'],
    ['two rules of one topic in one group', [{ topic: 'p', tags }, { topic: 'p', keys: tags }], 'EMQ_BAD_OPTION'],
  ])('refuses %s at forRoot', (_label, rules, c) => {
    expect(forRoot(rules)).toThrow(code(c));
  });

  it('accepts a valid rule list', () => {
    expect(forRoot([{ topic: 'p', tags, from: 'start', ackTimeoutMs: 1000 }, { topic: 'q', keys: tags }])).not.toThrow();
  });
});
