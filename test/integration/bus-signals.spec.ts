import type { Subscription } from 'rxjs';
import { BusService } from '../../src/index.js';
import { eventIdOf, topicKeys } from '../../src/protocol.js';
import { eventually, randomQueue } from '../helpers/valkey.js';
import { busFixture } from './bus-core.helpers.js';

const f = busFixture();

/** Number of connections subscribed to the topic's sharded channel. */
const subscribers = async (t: string): Promise<number> => {
  const r = (await f.raw.call('PUBSUB', 'SHARDNUMSUB', topicKeys(t).signal)) as [string, number];
  return Number(r[1]);
};

/** The CLIENT LIST id of the connection subscribed to a sharded channel. */
async function subscriberId(): Promise<string[]> {
  const list = (await f.raw.call('CLIENT', 'LIST')) as string;
  return list
    .split('\n')
    .filter((l) => / ssub=[1-9]/.test(l))
    .map((l) => /id=(\d+)/.exec(l)![1]);
}

describe('signals', () => {
  it('delivers to every observer over one shared subscription; drops bad JSON; resubscribes after CLIENT KILL', async () => {
    const t = randomQueue('sig');
    const a: unknown[] = [];
    const b: unknown[] = [];
    const errors: unknown[] = [];
    const subs: Subscription[] = [
      f.bus.signals(t).subscribe({ next: (v) => a.push(v), error: (e) => errors.push(e) }),
      f.bus.signals(t).subscribe({ next: (v) => b.push(v), error: (e) => errors.push(e) }),
    ];
    await eventually(async () => (await subscribers(t)) === 1, 3000, 'the subscription');
    expect(await f.bus.signal(t, { n: 1 })).toBe(1);
    await f.raw.call('SPUBLISH', topicKeys(t).signal, 'not json {');
    await f.raw.call('SPUBLISH', topicKeys(t).signal, '');
    expect(await f.bus.signal(t, 'two')).toBe(1);
    await eventually(() => a.length === 2 && b.length === 2, 3000, 'two signals each');
    expect(a).toEqual([{ n: 1 }, 'two']);
    expect(b).toEqual([{ n: 1 }, 'two']);

    const [id] = await subscriberId();
    expect(id).toBeDefined();
    await f.raw.call('CLIENT', 'KILL', 'ID', id);
    await eventually(async () => (await subscriberId()).some((x) => x !== id) && (await subscribers(t)) === 1, 5000, 'the resubscription');
    await f.bus.signal(t, 3);
    await eventually(() => a.length === 3 && b.length === 3, 3000, 'the signal after the reconnect');
    expect(a).toEqual([{ n: 1 }, 'two', 3]);
    expect(errors).toEqual([]);

    // The subscription lives while one observer does.
    subs[0].unsubscribe();
    await f.bus.signal(t, 4);
    await eventually(() => b.length === 4, 3000, 'the signal to the remaining observer');
    expect(a).toHaveLength(3);
    subs[1].unsubscribe();
    await eventually(async () => (await subscribers(t)) === 0, 3000, 'the unsubscription');
    expect(await f.bus.signal(t, 5)).toBe(0);

    // A new observer subscribes again.
    const c: unknown[] = [];
    const again = f.bus.signals<number>(t).subscribe((v) => c.push(v));
    await eventually(async () => (await subscribers(t)) === 1, 3000, 'the new subscription');
    await f.bus.signal(t, 6);
    await eventually(() => c.length === 1, 3000, 'the signal to the new observer');
    expect(c).toEqual([6]);
    again.unsubscribe();
  });

  it('observers complete when the f.bus closes; signals never touch the log', async () => {
    const own = new BusService(f.conn, { trimIntervalMs: 0 });
    const t = randomQueue('sig');
    let completed = false;
    own.signals(t).subscribe({ complete: () => (completed = true) });
    await eventually(async () => (await subscribers(t)) === 1, 3000, 'the subscription');
    await own.signal(t, 1);
    await own.close();
    expect(completed).toBe(true);
    await eventually(async () => (await subscribers(t)) === 0, 3000, 'the closed subscriber');
    expect(await f.raw.exists(topicKeys(t).log, topicKeys(t).meta)).toBe(0);
  });
});

describe('signals with a bad topic', () => {
  it('reject through the returned promise and error through the returned observable, never throwing', async () => {
    let sent: Promise<number> | undefined;
    expect(() => (sent = f.bus.signal('a b', 1))).not.toThrow();
    await expect(sent).rejects.toMatchObject({ code: 'EMQ_BAD_NAME' });
    let seen: ReturnType<typeof f.bus.signals> | undefined;
    expect(() => (seen = f.bus.signals('{x}'))).not.toThrow();
    const err = await new Promise((resolve) => seen!.subscribe({ next: () => resolve('a value'), error: resolve, complete: () => resolve('completed') }));
    expect(err).toMatchObject({ code: 'EMQ_BAD_NAME' });
  });
});

describe('dead letters', () => {
  it('reads the dead log newest first, in the documented format', async () => {
    const t = randomQueue('dead');
    const k = topicKeys(t);
    expect(await f.bus.deadLetters(t)).toEqual([]);
    const evt = eventIdOf('1795947512131-7');
    for (let i = 0; i < 3; i++) {
      await f.raw.xadd(k.dead, '*', 'id', evt, 'group', 'g', 'consumer', 'host-0', 'deliveries', String(5 + i), 'error', `Error: boom ${i}`, 'p', JSON.stringify({ i }), 'at', String(1795947512200 + i));
    }
    await f.raw.xadd(k.dead, '*', 'id', evt, 'group', 'g', 'consumer', 'host-0', 'deliveries', '1', 'error', 'x', 'p', 'not json', 'at', '1795947512300');
    const got = await f.bus.deadLetters<{ i: number }>(t, { count: 3 });
    expect(got.map((d) => [d.id, d.group, d.consumer, d.deliveries, d.error, d.payload, d.at.getTime()])).toEqual([
      [evt, 'g', 'host-0', 1, 'x', undefined, 1795947512300],
      [evt, 'g', 'host-0', 7, 'Error: boom 2', { i: 2 }, 1795947512202],
      [evt, 'g', 'host-0', 6, 'Error: boom 1', { i: 1 }, 1795947512201],
    ]);
    expect(got.every((d) => /^\d+-\d+$/.test(d.deadId))).toBe(true);
  });
});
