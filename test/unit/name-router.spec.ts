import { createTestJob } from '../../src/testing.js';
import { routeByName } from '../../src/unstable.js';
import { errors } from '../../src/index.js';

describe('routeByName (what @Processor(queue, { name }) methods share)', () => {
  const byName = new Map([
    ['charge', (j: { payload: unknown }) => `charge ${String(j.payload)}`],
    ['refund', () => 'refund'],
  ]);

  it('dispatches by job.name, the rest to the catch-all', async () => {
    const h = routeByName('payments', { byName, catchAll: (j) => `rest ${j.name ?? '-'}` });
    expect(await h(createTestJob(5, { name: 'charge' }))).toBe('charge 5');
    expect(await h(createTestJob(1, { name: 'refund' }))).toBe('refund');
    expect(await h(createTestJob(1, { name: 'audit' }))).toBe('rest audit');
    expect(await h(createTestJob(1))).toBe('rest -');
  });

  it('without a catch-all, an unknown name or no name throws NoHandlerError (EMQ_NO_HANDLER) naming the handled names', () => {
    const h = routeByName('payments', { byName });
    const thrown = (f: () => unknown): unknown => {
      try {
        f();
      } catch (err) {
        return err;
      }
      return undefined;
    };
    const err = thrown(() => h(createTestJob(1, { name: 'audit' })));
    expect(err).toBeInstanceOf(errors.NoHandlerError);
    expect(err).toMatchObject({ code: 'EMQ_NO_HANDLER', jobName: 'audit', handled: ['charge', 'refund'] });
    expect((err as Error).message).toContain('job name "audit" has no handler on queue "payments" (handled names: "charge", "refund"');
    expect(thrown(() => h(createTestJob(1)))).toMatchObject({ code: 'EMQ_NO_HANDLER', message: expect.stringContaining('a job without a name') });
  });

  it('createTestJob refuses a bad name as enqueue does', () => {
    expect(() => createTestJob(1, { name: '' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => createTestJob(1, { name: 'a\nb' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
  });
});
