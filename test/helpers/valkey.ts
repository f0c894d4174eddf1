import { randomBytes } from 'node:crypto';
import { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';

/** The URL of the run's Valkey (started by global-setup). */
export function testUrl(): string {
  const url = process.env.ECHOMQ_TEST_URL;
  if (!url) throw new Error('ECHOMQ_TEST_URL is not set: run the tests through jest (global-setup starts Valkey)');
  return url;
}

/** The port of the run's Valkey. */
export const testPort = (): number => Number(new URL(testUrl()).port);

/** A random queue name, so tests never share keys. */
export function randomQueue(prefix = 'q'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

/** A plain client for inspecting keys. */
export function rawClient(): Redis {
  return new Redis(testUrl(), { lazyConnect: false, maxRetriesPerRequest: 1 });
}

/** An open EchoMQ connection to the run's Valkey. */
export async function openConnection(): Promise<EchoMqConnection> {
  const conn = new EchoMqConnection({ url: testUrl() });
  await conn.open();
  return conn;
}

/** Every key of one queue (uses SCAN with the queue's tag). */
export async function queueKeysIn(raw: Redis, queue: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await raw.scan(cursor, 'MATCH', `emq:{${queue}}:*`, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out.sort();
}

/** Polls `check` until it returns true or `ms` passes. */
export async function eventually(check: () => Promise<boolean> | boolean, ms = 5000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}
