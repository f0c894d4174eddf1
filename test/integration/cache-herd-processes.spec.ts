import { killChildren, spawnFixture } from '../helpers/child.js';
import { randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

afterEach(async () => killChildren());

describe('a herd across two processes with the fill lease', () => {
  it('runs the loader once in all, and both processes get that one value', async () => {
    const ns = randomQueue('herd');
    const counter = `test:${ns}:loads`;
    const raw = rawClient();
    try {
      const children = [0, 1].map(() => spawnFixture('cache-child', [testUrl(), ns, 'cold', counter, '500']));
      await Promise.all(children.map((c) => c.waitForLine(/^READY$/, 10_000)));
      for (const c of children) c.send('go');
      const results = await Promise.all(children.map((c) => c.waitForLine(/^RESULT (.*)$/, 20_000)));
      const distinct = results.map((m) => JSON.parse(m[1]) as string[]);
      expect(Number(await raw.get(counter))).toBe(1);
      expect(distinct[0]).toHaveLength(1);
      expect(distinct[1]).toEqual(distinct[0]);
      await raw.del(counter);
    } finally {
      raw.disconnect();
    }
  });
});
