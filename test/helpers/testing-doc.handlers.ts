// The handlers of docs/testing.md ("The handlers under test"), as the page shows them (the
// package specifier replaced by the source path). Used by test/unit/create-test-job.spec.ts and
// test/integration/testing-module.spec.ts.
import { Injectable } from '@nestjs/common';
import { FatalJobError, Flow, Processor, type FlowJob, type Job } from '../../src/index.js';

@Injectable()
export class InvoiceWorker {
  @Processor('invoices', { attempts: 3 })
  async charge(job: Job<{ invoice: string; cents: number }>) {
    if (job.payload.cents <= 0) throw new FatalJobError('nothing to charge'); // straight to the morgue
    if (job.signal.aborted) throw new Error('lease lost, not charging');
    return { invoice: job.payload.invoice, charged: job.payload.cents, attempt: job.attempt };
  }
}

@Injectable()
export class SettlementStep {
  @Flow('settlements')
  async settle(job: FlowJob<{ order: string }, { cents: number }>) {
    // First run: fan out one fill per leg; the step runs again once they have all finished.
    if (job.children.list.length === 0) {
      return job.waitFor([
        { queue: 'fills', key: 'buy', payload: { order: job.payload.order, side: 'buy' } },
        { queue: 'fills', key: 'sell', payload: { order: job.payload.order, side: 'sell' } },
      ]);
    }
    const total = job.children.list.reduce((sum, c) => sum + (c.result?.cents ?? 0), 0);
    return { order: job.payload.order, total };
  }
}
