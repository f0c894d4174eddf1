import 'reflect-metadata';
import { CacheEvict, CacheScope, Cached, EchoMqError, Flow, Processor } from '../../src/index.js';

/** The error a call throws (undefined when it does not throw). */
function thrown(act: () => unknown): unknown {
  try {
    act();
  } catch (err) {
    return err;
  }
  return undefined;
}

const refused = (act: () => unknown, message: unknown) => {
  const err = thrown(act);
  expect(err).toBeInstanceOf(EchoMqError);
  expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION', message });
};

describe('decorator options: unknown keys are refused when the class is defined', () => {
  it('@Processor names the unknown key and the known ones', () => {
    refused(
      () => {
        class Worker {
          @Processor('orders', { concurency: 2 } as never)
          run(): void {}
        }
        return Worker;
      },
      'unknown @Processor("orders") options: concurency (known: concurrency, prefetch, leaseMs, attempts, backoff, timeoutMs, batch, schedules, name)',
    );
    refused(() => Processor('orders', { concurrency: 2, lease: 10, retries: 1 } as never), expect.stringContaining('options: lease, retries (known:'));
    refused(() => Processor('orders', null as never), '@Processor("orders") options must be an object');
    refused(() => Processor('orders', [] as never), '@Processor("orders") options must be an object');
  });

  it('@Processor still accepts every known key, and still checks ranges', () => {
    expect(thrown(() => Processor('orders', { concurrency: 2, prefetch: 0, leaseMs: 1000, attempts: 5, backoff: { type: 'fixed', delayMs: 10 } }))).toBeUndefined();
    expect(thrown(() => Processor('orders'))).toBeUndefined();
    expect(thrown(() => Processor('orders', { concurrency: 0 }))).toMatchObject({ code: 'EMQ_BAD_OPTION' });
  });

  it('@Flow refuses unknown keys the same way', () => {
    refused(() => Flow('parents', { concurrency: 1, onFailure: 'ignore' } as never), expect.stringMatching(/^unknown @Flow\("parents"\) options: onFailure \(known:/));
    expect(thrown(() => Flow('parents', { concurrency: 4 }))).toBeUndefined();
  });

  it('@Cached, @CacheEvict and @CacheScope refuse unknown keys', () => {
    refused(() => Cached({ scope: 'public', ttl: 5000 } as never), expect.stringMatching(/^unknown @Cached options: ttl \(ttlMs: milliseconds, always \(cache-manager took seconds before v5\)\) \(known: .*ttlMs.*key, scope\)$/));
    expect(thrown(() => Cached({ scope: 'public', key: 'k', ttlMs: 5000, tags: ['t'], graceMs: 1, jitter: 0, namespace: 'n', negativeTtlMs: 0, fillLease: true, fillLeaseMs: 10 }))).toBeUndefined();
    refused(() => CacheEvict({ tags: ['t'], tag: 'x' } as never), 'unknown @CacheEvict options: tag (known: namespace, keys, tags)');
    expect(thrown(() => CacheEvict({ keys: ['k'], namespace: 'n' }))).toBeUndefined();
    refused(() => CacheScope('public', { ttl: 1000 } as never), 'unknown @CacheScope options: ttl (ttlMs: milliseconds, always (cache-manager took seconds before v5)) (known: ttlMs, namespace, tags)');
    expect(thrown(() => CacheScope('everyone' as never))).toMatchObject({ code: 'EMQ_BAD_OPTION' });
    expect(thrown(() => CacheScope('user', { ttlMs: 1000, namespace: 'http', tags: [] }))).toBeUndefined();
  });
});
