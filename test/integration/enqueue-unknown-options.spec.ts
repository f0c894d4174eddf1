import type { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/protocol.js';
import { Queue, QueueService, type EnqueueOptions } from '../../src/index.js';
import { allRefusedUnchanged, codeOf } from '../helpers/refusals.js';
import { openConnection, queueKeysIn, randomQueue, rawClient } from '../helpers/valkey.js';

let raw: Redis, conn: EchoMqConnection, queues: QueueService;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  queues = new QueueService(conn);
});
afterAll(async () => Promise.all([conn.close(), raw.quit()]));

/** Options a BullMQ user would write, and misspellings: each is refused, none is ignored. */
const bad: [string, unknown][] = [
  ['jobId', { jobId: 'order-42' }],
  ['removeOnComplete', { removeOnComplete: true }],
  ['removeOnFail', { removeOnFail: 10 }],
  ['a misspelt attempts', { attemps: 3 }],
  ['a key of backoff', { backoff: { type: 'fixed', delay: 100 } }],
];

describe('enqueue options: unknown keys are refused and write nothing', () => {
  it.each(bad)('%s: enqueue, enqueueMany and the typed handle refuse it (EMQ_BAD_OPTION), nothing written', async (_what, opts) => {
    const q = randomQueue('unknown-opts');
    await queues.enqueue(q, { seed: 1 }); // the queue exists: a refused write would show as a change
    const handle = new Queue<{ n: number }>(q, queues);
    const o = opts as EnqueueOptions;
    await allRefusedUnchanged(
      raw,
      'EMQ_BAD_OPTION',
      [
        () => queues.enqueue(q, { n: 1 }, o),
        () => queues.enqueueMany(q, [{ payload: { n: 1 } }, { payload: { n: 2 }, opts: o }]),
        () => handle.enqueue({ n: 1 }, o),
        () => handle.enqueueMany([{ payload: { n: 1 }, opts: o }]),
      ],
      `emq:{${q}}:*`,
    );
    expect((await queues.counts(q)).pending).toBe(1);
  });

  it('the message names the key, its place and a hint', async () => {
    const q = randomQueue('unknown-opts');
    await expect(queues.enqueue(q, 1, { jobId: 'x' } as EnqueueOptions)).rejects.toMatchObject({
      code: 'EMQ_BAD_OPTION',
      message: expect.stringMatching(/^unknown enqueue options: jobId \(de-duplicate by a business key with key, or pass a minted id .*\) \(known: delay, /),
    });
    await expect(queues.enqueueMany(q, [{ payload: 1 }, { payload: 2, opts: { attemps: 2 } as EnqueueOptions }])).rejects.toMatchObject({
      code: 'EMQ_BAD_OPTION',
      message: expect.stringContaining('unknown enqueueMany items: [1].opts.attemps (known:'),
    });
    expect(await queueKeysIn(raw, q)).toEqual([]); // nothing minted into the keyspace, not even meta
    expect(await codeOf(() => queues.enqueue(q, 1, { delay: 5, attempts: 2, backoff: { type: 'fixed', delayMs: 1 } }))).toMatch(/^resolved/);
  });
});
