import 'reflect-metadata';
import { EchoMqError, EchoMqModule, Flow, Processor, type EchoMqModuleOptions, type ProcessorOptions, type QueueRegistration } from '../../src/index.js';
import { BUILTIN_DEFAULTS, checkEnqueueItem, checkEnqueueOptions, resolveDefaults } from '../../src/queue/queue-options.js';
import { refuseUnknownKeys, keySet, finiteIn } from '../../src/core/known-keys.js';

/** The error a call throws (undefined when it does not throw). */
function thrown(act: () => unknown): unknown {
  try {
    act();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** `act` throws EMQ_BAD_OPTION whose message names `path` (as `: <path>` or `<path> must`). */
function refusedNaming(act: () => unknown, path: string): string {
  const err = thrown(act);
  expect(err).toBeInstanceOf(EchoMqError);
  expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION' });
  const message = (err as Error).message;
  expect(message).toContain(path);
  return message;
}

const url = 'redis://127.0.0.1:1';
const forRoot = (o: unknown) => () => EchoMqModule.forRoot(o as EchoMqModuleOptions);

describe('no silent option: a misspelt key at any depth is refused naming its path', () => {
  // [what, options given to forRoot, the path the message names]
  const moduleCases: [string, unknown, string][] = [
    ['top level', { connection: { url }, defualts: {} }, 'unknown EchoMqModule options: defualts (known: connection'],
    ['defaults', { connection: { url }, defaults: { attemps: 3 } }, 'unknown EchoMqModule options: defaults.attemps (known: attempts'],
    ['defaults.backoff', { connection: { url }, defaults: { backoff: { type: 'fixed', delayMs: 1, jitter: 1 } } }, 'unknown EchoMqModule options: defaults.backoff.jitter (known: type, delayMs)'],
    ['queues.<name>', { connection: { url }, queues: { orders: { attemps: 3 } } }, 'unknown EchoMqModule options: queues.orders.attemps (known: attempts'],
    ['queues.<name>.rateLimit', { connection: { url }, queues: { orders: { rateLimit: { max: 1, intervalMs: 10, burst: 1 } } } }, 'unknown rateLimit: queues.orders.rateLimit.burst'],
    ['queues.<name>.lanes', { connection: { url }, queues: { orders: { lanes: { concurency: 2 } } } }, 'unknown lane options: queues.orders.lanes.concurency'],
    ['defaults.lanes.overrides.<lane>', { connection: { url }, defaults: { lanes: { overrides: { vip: { wieght: 3 } } } } }, 'unknown lane options: defaults.lanes.overrides.vip.wieght'],
    ['defaults.lanes.rateLimit', { connection: { url }, defaults: { lanes: { rateLimit: { max: 1, intervalMs: 10, burst: 1 } } } }, 'unknown rateLimit: defaults.lanes.rateLimit.burst'],
    ['queues.<name>.backoff', { connection: { url }, queues: { orders: { backoff: { type: 'fixed', delay: 5 } } } }, 'queues.orders.backoff.delay (the delay is delayMs here)'],
    ['queues.<name>, a BullMQ name', { connection: { url }, queues: { orders: { removeOnComplete: true } } }, 'queues.orders.removeOnComplete (keepDone'],
    ['connection', { connection: { url, conectTimeoutMs: 5 } }, 'unknown EchoMqModule options: connection.conectTimeoutMs'],
    ['connection, an iovalkey name', { connection: { url, connectTimeout: 5 } }, 'connection.connectTimeout (connectTimeoutMs)'],
    ['connection embedded', { connection: { embedded: true, port: 1 } }, 'connection.port'],
    ['connection.cluster[i]', { connection: { cluster: [{ host: 'a', port: 1 }, { host: 'b', prot: 2 }] } }, 'connection.cluster[1].prot'],
    ['connection.retryAtBoot', { connection: { url, retryAtBoot: { maxWait: 5 } } }, 'connection.retryAtBoot.maxWait'],
    ['bus', { connection: { url }, bus: { deadcap: 5 } }, 'unknown EchoMqModule options: bus.deadcap'],
    ['cache', { connection: { url }, cache: { ttl: 5 } }, 'unknown EchoMqModule options: cache.ttl'],
    ['cache.invalidateOn[i]', { connection: { url }, cache: { invalidateOn: [{ topic: 't', tags: () => [], group: 'g' }, { topic: 'u', tag: () => [] }] } }, 'unknown cache options: invalidateOn[1].tag'],
    ['flows', { connection: { url }, flows: { relays: false } }, 'unknown EchoMqModule options: flows.relays'],
    ['flows.bounds', { connection: { url }, flows: { bounds: { depth: 3 } } }, 'unknown EchoMqModule options: flows.bounds.depth (known: maxDepth'],
    ['telemetry', { connection: { url }, telemetry: { traces: false } }, 'unknown EchoMqModule options: telemetry.traces'],
  ];
  it.each(moduleCases)('forRoot: %s', (_what, options, named) => {
    refusedNaming(forRoot(options), named);
  });

  const valueCases: [string, unknown, string][] = [
    ['defaults.leaseMs NaN', { connection: { url }, defaults: { leaseMs: NaN } }, 'defaults.leaseMs must be an integer'],
    ['queues.<name>.keepDone Infinity', { connection: { url }, queues: { orders: { keepDone: Infinity } } }, 'queues.orders.keepDone must be an integer'],
    ['queues.<name>.backoff.delayMs NaN', { connection: { url }, queues: { orders: { backoff: { type: 'fixed', delayMs: NaN } } } }, 'queues.orders.backoff.delayMs'],
    ['connection.connectTimeoutMs NaN', { connection: { url, connectTimeoutMs: NaN } }, 'connection.connectTimeoutMs'],
    ['connection.port', { connection: { host: 'h', port: 70000 } }, 'connection.port'],
    ['flows.sweepMs NaN', { connection: { url }, flows: { sweepMs: NaN } }, 'flows.sweepMs'],
    ['flows.bounds.maxDepth 0', { connection: { url }, flows: { bounds: { maxDepth: 0 } } }, 'flows.bounds.maxDepth'],
    ['flows.waitTimeoutMs 0 (WAIT would block forever)', { connection: { url }, flows: { waitTimeoutMs: 0 } }, 'flows.waitTimeoutMs'],
    ['bus.trimIntervalMs Infinity', { connection: { url }, bus: { trimIntervalMs: Infinity } }, 'bus.trimIntervalMs'],
    ['shutdownTimeoutMs NaN', { connection: { url }, shutdownTimeoutMs: NaN }, 'shutdownTimeoutMs'],
  ];
  it.each(valueCases)('forRoot: %s is refused', (_what, options, named) => {
    refusedNaming(forRoot(options), named);
  });

  it('forRoot accepts every known key at every depth', () => {
    const ok: EchoMqModuleOptions = {
      connection: { url, connectTimeoutMs: 100, commandTimeoutMs: 0, autoPipelining: false, allowEvictingPolicy: false, evictionCheckMs: 0, retryAtBoot: { maxWaitMs: 10, intervalMs: 10 } },
      defaults: { attempts: 2, backoff: { type: 'fixed', delayMs: 0 }, leaseMs: 1000, keepDone: 0, deadCap: 1, keepCancelled: 1, maxPayloadBytes: 10, eventsLog: 0, dedupWindowMs: 1 },
      queues: { orders: { attempts: 5 } },
      bus: { instance: 'a', maxPayloadBytes: 10, deadCap: 10, trimIntervalMs: 0 },
      cache: { namespace: 'n', ttlMs: 5 },
      flows: { bounds: { maxDepth: 3 }, leaseMs: 10, sweepMs: 10, outboxBound: 10, waitReplicas: 0, waitTimeoutMs: 10, relay: true },
      telemetry: { tracing: false },
      shutdownTimeoutMs: 0,
      consumers: false,
    };
    expect(thrown(() => EchoMqModule.forRoot(ok))).toBeUndefined();
    expect(thrown(() => EchoMqModule.forRoot({ connection: { cluster: [{ host: 'a', port: 7000 }], tls: { rejectUnauthorized: false } } }))).toBeUndefined();
  });

  it('forRootAsync refuses unknown keys of its own options', () => {
    refusedNaming(() => EchoMqModule.forRootAsync({ useFactory: () => ({}), injects: [] } as never), 'unknown forRootAsync options: injects');
  });

  const featureCases: [string, QueueRegistration[], string][] = [
    ['an entry', [{ name: 'a' }, { name: 'b', default: {} } as never], 'unknown forFeature queue options: [1].default'],
    ['its defaults', [{ name: 'a', defaults: { attemps: 2 } as never }], 'unknown forFeature queue options: [0].defaults.attemps'],
    ['its defaults.backoff', [{ name: 'a', defaults: { backoff: { type: 'fixed', delayMs: 1, max: 3 } as never } }], '[0].defaults.backoff.max'],
  ];
  it.each(featureCases)('forFeature: %s', (_what, regs, named) => {
    refusedNaming(() => EchoMqModule.forFeature(regs), named);
  });

  const processorCases: [string, unknown, string][] = [
    ['top level', { concurency: 2 }, 'unknown @Processor("orders") options: concurency'],
    ['a BullMQ name', { lockDuration: 5 }, 'lockDuration (leaseMs)'],
    ['backoff', { backoff: { type: 'fixed', delayMs: 1, jitter: 1 } }, 'unknown @Processor("orders") options: backoff.jitter'],
    ['batch', { batch: { size: 2, maxWait: 5 } }, 'unknown @Processor("orders") options: batch.maxWait'],
    ['schedules[i]', { schedules: [{ name: 'r', every: 1000 }, { name: 's', every: 1000, payloadd: 1 }] }, 'unknown @Processor("orders") options: schedules[1].payloadd (known: name'],
    ['schedules[i].backoff', { schedules: [{ name: 's', every: 1000, backoff: { type: 'fixed', delay: 1 } }] }, 'backoff.delay'],
  ];
  it.each(processorCases)('@Processor: %s', (_what, options, named) => {
    refusedNaming(() => Processor('orders', options as ProcessorOptions), named);
  });
  it('@Flow: backoff', () => {
    refusedNaming(() => Flow('parents', { backoff: { type: 'fixed', delayMs: 1, jitter: 1 } } as never), 'unknown @Flow("parents") options: backoff.jitter');
  });

  const enqueueCases: [string, unknown, string][] = [
    ['a misspelt key', { delya: 5 }, 'unknown enqueue options: delya (known: delay'],
    ['jobId (BullMQ)', { jobId: 'x' }, 'jobId (de-duplicate by a business key with key'],
    ['removeOnComplete (BullMQ)', { removeOnComplete: true }, "removeOnComplete (the queue's keepDone"],
    ['repeat (BullMQ)', { repeat: { every: 5 } }, 'repeat (a recurring job is a schedule'],
    ['backoff', { backoff: { type: 'fixed', delayMs: 1, delay: 3 } }, 'backoff.delay'],
    ['not an object', 5, 'enqueue options must be an object'],
  ];
  it.each(enqueueCases)('enqueue options: %s', (_what, opts, named) => {
    refusedNaming(() => checkEnqueueOptions(opts), named);
  });
  it('enqueueMany items name their index', () => {
    refusedNaming(() => checkEnqueueItem({ payload: 1, opts: { attemps: 2 } }, 3), 'unknown enqueueMany items: [3].opts.attemps');
    refusedNaming(() => checkEnqueueItem({ data: 1 }, 0), "[0].data (the job's data is its payload here)");
    refusedNaming(() => checkEnqueueItem(null, 2), 'enqueueMany items: [2] must be an object');
    expect(thrown(() => checkEnqueueItem({ payload: 1, opts: { delay: 5, attempts: 2, key: 'k' } }, 0))).toBeUndefined();
  });

  it('resolveDefaults names its own paths (QueueService overrides)', () => {
    refusedNaming(() => resolveDefaults(BUILTIN_DEFAULTS, { keepDonne: 5 } as never), 'unknown queue options: keepDonne');
  });

  it('the one check: paths join, hints attach, non-objects are refused', () => {
    const known = keySet<{ a: number; b: number }>({ a: true, b: true });
    expect(thrown(() => refuseUnknownKeys({ a: 1, c: 2, d: 3 }, known, 'x options', { path: 'p.q', hints: { d: 'use b' } }))).toMatchObject({
      message: 'unknown x options: p.q.c, p.q.d (use b) (known: a, b)',
    });
    expect(thrown(() => refuseUnknownKeys([], known, 'x options', { path: 'p' }))).toMatchObject({ message: 'x options: p must be an object' });
    expect(thrown(() => refuseUnknownKeys(undefined, known, 'x options'))).toBeUndefined();
    expect(thrown(() => finiteIn(NaN, 0, 1, 'v'))).toMatchObject({ code: 'EMQ_BAD_OPTION', message: 'v must be a finite number in 0..1, got NaN' });
  });
});
