import { randomBytes } from 'node:crypto';
import { Redis } from 'iovalkey';
import { QueueService } from '@echomq/nestjs';
import { EchoMqConnection, queueKeys } from '@echomq/nestjs/protocol';
import { BUILTIN_DEFAULTS } from '@echomq/nestjs/unstable';
import { ceilingCallArgs, ceilingScript } from '../ceiling.js';

/** The URL of the throwaway Valkey (`npm test -w bench` starts one through with-valkey). */
function testUrl(): string {
  const url = process.env.ECHOMQ_TEST_URL;
  if (!url) throw new Error('ECHOMQ_TEST_URL is not set: run through `npm test -w bench` (with-valkey starts Valkey)');
  return url;
}
const randomQueue = (prefix: string): string => `${prefix}-${randomBytes(5).toString('hex')}`;
const rawClient = (): Redis => new Redis(testUrl(), { lazyConnect: false, maxRetriesPerRequest: 1 });
async function openConnection(): Promise<EchoMqConnection> {
  const conn = new EchoMqConnection({ url: testUrl() });
  await conn.open();
  return conn;
}

// The bench's Valkey ceiling runs the real claim.lua and complete.lua inside one wrapper script:
// if the protocol's arguments or replies change, this fails before a benchmark reports nonsense.
describe('bench ceiling wrapper (real claim.lua + complete.lua)', () => {
  let conn: EchoMqConnection;
  let raw: Redis;

  beforeAll(async () => {
    conn = await openConnection();
    raw = rawClient();
  });
  afterAll(async () => {
    await conn.close();
    await raw.quit();
  });

  it('claims and completes a full batch per call, and leaves nothing pending or active', async () => {
    const q = randomQueue('ceil');
    const k = queueKeys(q);
    await new QueueService(conn, BUILTIN_DEFAULTS).enqueueMany(q, Array.from({ length: 120 }, (_, i) => ({ payload: { i } })));
    const sha = (await raw.script('LOAD', ceilingScript())) as string;
    const call = (n: number) => raw.call('EVALSHA', sha, ...ceilingCallArgs(q, n));
    expect(await call(50)).toBe(50);
    expect(await call(50)).toBe(50);
    expect(await call(50)).toBe(20);
    expect(await call(50)).toBe(0);
    expect(await raw.llen(k.pending)).toBe(0);
    expect(await raw.zcount(k.active, '-inf', '(+inf')).toBe(0);
    expect(await raw.zcard(k.done)).toBe(120);
    const [first] = await raw.zrange(k.done, 0, 0);
    expect(await raw.hget(k.claimedRow(first), 'status')).toBe('done');
  });

  it('passes a script error through and writes nothing', async () => {
    const q = randomQueue('ceil');
    const k = queueKeys(q);
    await raw.set(k.pending, 'not a list');
    const sha = (await raw.script('LOAD', ceilingScript())) as string;
    await expect(raw.call('EVALSHA', sha, ...ceilingCallArgs(q, 10))).rejects.toThrow(/EMQ_WRONGTYPE/);
    expect(await raw.exists(k.active, k.done, k.meta)).toBe(0);
  });
});
