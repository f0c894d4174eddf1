import { Cluster } from 'iovalkey';
import type { ValkeyClient } from '../protocol/connection.js';
import { keySlot } from '../protocol/slot.js';
import type { CreateEntry } from './flow.plan.js';

/**
 * Test hook (crash tests): with `ECHOMQ_TEST_RELAY_HOLD` = `before-relay` or `before-ack`, the relay
 * prints `relay-hold <point> <entry ids>` and stops for good at that point, so a test can SIGKILL
 * the process between taking entries and relaying them, or between relaying and acknowledging.
 */
export async function testHold(point: 'before-relay' | 'before-ack', ids: readonly string[]): Promise<void> {
  if (process.env.ECHOMQ_TEST_RELAY_HOLD !== point) return;
  process.stdout.write(`relay-hold ${point} ${ids.join(',')}\n`);
  await new Promise<never>(() => undefined);
}

/** A creation entry's target queue and content, or undefined when the text is not one. */
export function parseCreate(text: string): { queue: string; entry: CreateEntry } | undefined {
  const m = /^c (\S+) ([\s\S]*)$/.exec(text);
  if (!m) return undefined;
  try {
    return { queue: m[1], entry: JSON.parse(m[2]) as CreateEntry };
  } catch {
    return undefined;
  }
}

/** A promise's outcome as a value. */
export function settle<T>(p: Promise<T>): Promise<PromiseSettledResult<T>> {
  return p.then(
    (value) => ({ status: 'fulfilled', value }),
    (reason: unknown) => ({ status: 'rejected', reason }),
  );
}


/** The queue an outbox entry's target script runs on (the first queue its text names). */
export function targetOf(text: string): string | undefined {
  return /^[cdx] (\S+) /.exec(text)?.[1];
}

/**
 * Waits until the writes this client sent to the node owning `key` reached `replicas` replicas
 * (`WAIT`, on that node's own connection on a cluster); false when they did not within `timeoutMs`.
 */
export async function replicated(client: ValkeyClient, key: string, replicas: number, timeoutMs: number): Promise<boolean> {
  let node: ValkeyClient | undefined = client;
  if (client instanceof Cluster) {
    const owner = (client as unknown as { slots: string[][] }).slots[keySlot(key)]?.[0];
    node = client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
  }
  if (!node) return false;
  try {
    return Number(await node.call('WAIT', replicas, timeoutMs)) >= replicas;
  } catch {
    return false;
  }
}
