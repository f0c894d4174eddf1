import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { EchoMqError, WaitingForChildren, errors } from '../../src/index.js';
import { isBrandedId } from '../../src/protocol.js';
import { createTestFlowJob, createTestJob } from '../../src/testing.js';
import { InvoiceWorker, SettlementStep } from '../helpers/testing-doc.handlers.js';

// ---- docs/testing.md, "Unit tests", as the page shows it (specifiers replaced by source paths) ----

describe('InvoiceWorker (unit, no Valkey)', () => {
  let worker: InvoiceWorker;
  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({ providers: [InvoiceWorker] }).compile();
    worker = moduleRef.get(InvoiceWorker);
  });

  it('charges the invoice', async () => {
    const job = createTestJob({ invoice: 'A1', cents: 500 });
    expect(isBrandedId(job.id, 'job')).toBe(true);
    await expect(worker.charge(job)).resolves.toEqual({ invoice: 'A1', charged: 500, attempt: 1 });
  });

  it('reports the attempt it runs in', async () => {
    const job = createTestJob({ invoice: 'A1', cents: 500 }, { attempt: 3 });
    await expect(worker.charge(job)).resolves.toMatchObject({ attempt: 3 });
  });

  it('refuses an empty invoice for good', async () => {
    await expect(worker.charge(createTestJob({ invoice: 'A2', cents: 0 }))).rejects.toThrow('nothing to charge');
  });

  it('does not charge once its lease is lost', async () => {
    const job = createTestJob({ invoice: 'A3', cents: 500 });
    job.abort();
    await expect(worker.charge(job)).rejects.toThrow('lease lost');
  });
});

describe('SettlementStep (unit, no Valkey)', () => {
  let step: SettlementStep;
  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({ providers: [SettlementStep] }).compile();
    step = moduleRef.get(SettlementStep);
  });

  it('fans out a fill per leg on its first run', async () => {
    const job = createTestFlowJob({ order: 'o-1' });
    await expect(step.settle(job)).rejects.toBeInstanceOf(WaitingForChildren);
    expect(job.fanOuts).toHaveLength(1);
    expect(job.fanOuts[0].children.map((c) => c.key)).toEqual(['buy', 'sell']);
  });

  it('adds up its children once they are done', async () => {
    const job = createTestFlowJob({ order: 'o-1' }, { children: [{ key: 'buy', result: { cents: 700 } }, { key: 'sell', result: { cents: 300 } }] });
    await expect(step.settle(job)).resolves.toEqual({ order: 'o-1', total: 1000 });
  });
});

// ---- beyond the page: what the helpers promise ----

const codeOf = (act: () => unknown): string | undefined => {
  try {
    act();
  } catch (err) {
    return err instanceof EchoMqError ? err.code : `not an EchoMqError: ${String(err)}`;
  }
  return undefined;
};

describe('createTestJob', () => {
  it('records checkpoint, progress and log calls, and takes a checkpointed state', async () => {
    const job = createTestJob({ n: 1 }, { attempt: 2, checkpointed: { step: 4 } });
    expect(job.checkpointed).toEqual({ step: 4 });
    await job.checkpoint({ step: 5 });
    await job.progress(50);
    await job.log('resumed at 4');
    expect(job.writes).toEqual({ checkpoints: [{ step: 5 }], progress: [50], logs: ['resumed at 4'] });
  });

  it('has every member of Job, with the defaults the docs state, and fresh ids', () => {
    const job = createTestJob({ n: 1 });
    expect(Object.keys(job).sort()).toEqual(['abort', 'attempt', 'checkpoint', 'checkpointed', 'id', 'log', 'name', 'payload', 'progress', 'queue', 'signal', 'token', 'writes']);
    expect(job).toMatchObject({ queue: 'test', attempt: 1, token: '1', payload: { n: 1 } });
    expect(job.id).toHaveLength(14);
    expect(job.signal.aborted).toBe(false);
    const other = createTestJob({ n: 2 });
    expect(other.id).not.toBe(job.id);
    expect(other.id > job.id).toBe(true); // mint order
  });

  it('abort() fires the signal with its reason; a given signal fires it too', () => {
    const job = createTestJob(null);
    const seen: string[] = [];
    job.signal.addEventListener('abort', () => seen.push((job.signal.reason as Error).message));
    job.abort('shutting down');
    expect(seen).toEqual(['shutting down']);
    const lost = createTestJob(null, { queue: 'orders' });
    lost.abort(); // no reason: a lost lease, typed as the runtime types it
    expect(lost.signal.reason).toBeInstanceOf(errors.LeaseLostError);
    expect(lost.signal.reason).toMatchObject({ code: 'EMQ_STALE_TOKEN', jobId: lost.id, queue: 'orders' });
    const own = new AbortController();
    const linked = createTestJob(null, { signal: own.signal });
    own.abort(new Error('mine'));
    expect(linked.signal.aborted).toBe(true);
    const both = createTestJob(null, { signal: new AbortController().signal });
    both.abort();
    expect((both.signal.reason as Error).message).toBe('EchoMQ lease lost');
  });

  it('takes valid overrides and refuses invalid ones with typed errors', () => {
    const id = createTestJob(0).id;
    expect(createTestJob(0, { id, queue: 'orders', attempt: 4, token: '977' })).toMatchObject({ id, queue: 'orders', attempt: 4, token: '977' });
    expect(codeOf(() => createTestJob(0, { id: 'job-1' }))).toBe('EMQ_BAD_ID');
    expect(codeOf(() => createTestJob(0, { id: id.replace('job', 'evt') }))).toBe('EMQ_BAD_ID');
    expect(codeOf(() => createTestJob(0, { queue: 'a{b}' }))).toBe('EMQ_BAD_NAME');
    for (const attempt of [0, 1.5, 1001, Number.NaN]) expect(codeOf(() => createTestJob(0, { attempt }))).toBe('EMQ_BAD_OPTION');
    for (const token of ['', 'abc', '-1', '1'.repeat(17)]) expect(codeOf(() => createTestJob(0, { token }))).toBe('EMQ_BAD_OPTION');
  });
});

describe('createTestFlowJob', () => {
  it('builds children as the runtime does: in order, by id and by key; a failed child under ignore is left out', () => {
    const job = createTestFlowJob<null, number>(null, {
      children: [
        { result: 1 },
        { key: 'late', outcome: 'failed', error: 'card declined', policy: 'continue', queue: 'fills' },
        { key: 'skipped', outcome: 'failed', policy: 'ignore' },
        { key: 'gone', outcome: 'cancelled' },
      ],
    });
    expect(job.children.list.map((c) => [c.key, c.outcome, c.policy, c.result ?? c.error])).toEqual([
      ['0', 'done', 'fail', 1],
      ['late', 'failed', 'continue', 'card declined'],
      ['gone', 'cancelled', 'fail', 'child cancelled'],
    ]);
    expect(job.children.byKey.late.queue).toBe('fills');
    for (const c of job.children.list) {
      expect(isBrandedId(c.id, 'job')).toBe(true);
      expect(job.children.byId[c.id]).toBe(c);
    }
  });

  it('waitFor records each fan-out with minted ids and rejects with WaitingForChildren naming them', async () => {
    const job = createTestFlowJob({ order: 'o' });
    const err = await job.waitFor([{ queue: 'fills', payload: 1 }, { queue: 'fills', payload: 2, key: 'b' }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitingForChildren);
    expect(job.fanOuts).toHaveLength(1);
    expect((err as WaitingForChildren).children).toEqual(job.fanOuts[0].ids);
    expect(job.fanOuts[0].ids.every((id) => isBrandedId(id, 'job'))).toBe(true);
  });

  it('waitFor refuses what the real one refuses, recording nothing', async () => {
    const job = createTestFlowJob(null);
    const code = (p: Promise<unknown>) => p.then(() => 'resolved', (e: unknown) => (e instanceof EchoMqError ? e.code : String(e)));
    expect(await code(job.waitFor([]))).toBe('EMQ_BAD_OPTION');
    expect(await code(job.waitFor([{ queue: 'bad name', payload: 1 }]))).toBe('EMQ_BAD_NAME');
    expect(await code(job.waitFor([{ queue: 'fills', payload: 'x'.repeat(600_000) }]))).toBe('EMQ_PAYLOAD_TOO_LARGE');
    expect(job.fanOuts).toEqual([]);
  });
});
