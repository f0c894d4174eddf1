import type { Delivery, OutboxEntry } from '../../core/wire/index.js';
import type { CreateEntry, WrittenCreate } from './flow-plan.js';

/**
 * Test hook (crash tests): with `ECHOMQ_TEST_RELAY_HOLD` = `before-relay` or `before-ack`, the relay
 * prints `relay-hold <point> <entry ids>` and stops for good at that point, so a test can SIGKILL
 * the process between taking entries and relaying them, or between relaying and acknowledging.
 * Undefined when not holding, so the relay goes on without yielding (a hand-off's target script is
 * written before anything else this turn sends, e.g. the consumer's next claim).
 */
export function testHold(point: 'before-relay' | 'before-ack', ids: readonly string[]): Promise<never> | undefined {
  if (process.env.ECHOMQ_TEST_RELAY_HOLD !== point) return undefined;
  process.stdout.write(`relay-hold ${point} ${ids.join(',')}\n`);
  return new Promise<never>(() => undefined);
}

/** An outbox entry's creation (target queue and content): the one this process encoded, else its text decoded. */
export function createOf(e: OutboxEntry): { queue: string; entry: CreateEntry } | undefined {
  return (e as Partial<WrittenCreate>).made ?? (e.text.startsWith('c ') ? parseCreate(e.text) : undefined);
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

/** A delivery entry's target queue and delivery (`d <queue> <parent> <child> <outcome> <text>`), or undefined. */
export function parseDeliver(text: string): { queue: string; d: Delivery } | undefined {
  const m = /^d (\S+) (\S+) (\S+) (done|failed|cancelled) ([\s\S]*)$/.exec(text);
  if (!m) return undefined;
  return { queue: m[1], d: { parentId: m[2], childId: m[3], outcome: m[4] as Delivery['outcome'], text: m[5] } };
}

/**
 * Runs `items` in calls of at most `max` (`run` resolves to one value per item); a refused call
 * of several is retried one item per call, so one bad item fails alone.
 */
export async function batched<I, R>(items: readonly I[], max: number, run: (part: readonly I[]) => Promise<R[]>): Promise<PromiseSettledResult<R>[]> {
  const out: PromiseSettledResult<R>[] = [];
  for (let i = 0; i < items.length; i += max) {
    const part = items.slice(i, i + max);
    try {
      for (const value of await run(part)) out.push({ status: 'fulfilled', value });
    } catch (err) {
      if (part.length === 1) out.push({ status: 'rejected', reason: err });
      else for (const one of part) out.push(await settle(run([one]).then((r) => r[0])));
    }
  }
  return out;
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
