import type { Redis } from 'iovalkey';
import { BusService } from '../../src/index.js';
import type { EchoMqConnection } from '../../src/protocol.js';
import { openConnection, rawClient } from '../helpers/valkey.js';

/** Drains an async iterable into an array. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of it) out.push(v);
  return out;
}

export { codeOf, snapshot } from '../helpers/refusals.js';

/** Server clock, ms. */
export async function serverMs(raw: Redis): Promise<number> {
  const [s, us] = await raw.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** Waits until the server clock has moved past `ms`. */
export async function pastMs(raw: Redis, ms: number): Promise<void> {
  while ((await serverMs(raw)) <= ms) await new Promise((r) => setTimeout(r, 2));
}

/** What a Bus test file shares: a raw client, a connection and a BusService (no trim timer). */
export interface BusFixture {
  raw: Redis;
  conn: EchoMqConnection;
  bus: BusService;
}

/** Registers the hooks that open the fixture before the file and close it after. */
export function busFixture(): BusFixture {
  const f = {} as BusFixture;
  beforeAll(async () => {
    f.raw = rawClient();
    f.conn = await openConnection();
    f.bus = new BusService(f.conn, { trimIntervalMs: 0 });
  });
  afterAll(async () => {
    await f.bus.close();
    await Promise.all([f.conn.close(), f.raw.quit()]);
  });
  return f;
}
