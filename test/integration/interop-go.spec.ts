/**
 * Interop with the Go peer (peers/go), on one queue of one real Valkey:
 * (a) a TS producer (QueueService) and a Go consumer (echomq-worker): every job done exactly once,
 *     results read back from TS with getJob;
 * (b) a Go producer (echomq-produce, ids minted on its own leased node number) and a TS
 *     `@Processor`: every job done exactly once, results read back from Go with peek.lua.
 * Every tenth job fails its first attempt on the consuming side and is retried after its backoff.
 * Flows across the runtimes (docs/protocol.md §10):
 * (c) a TS flow whose children a Go worker runs, every hand-off relayed by the Go relay (no TS
 *     relay): the TS parent runs once, with every child's result;
 * (d) a Go-consumed parent whose children a TS consumer runs, relayed by TS: the Go parent is
 *     released and sees its children's results.
 * (e) a lane cap stored by TS (setPolicy) holds for a Go worker of concurrency 10;
 * (f) a Go Bus consumer-group member (echomq-bus) reads a topic a TS BusService publishes to.
 * The Go binaries come from dist/go (scripts/build-go.sh, run by `npm test`), built here if missing.
 */
import 'reflect-metadata';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { BusService, EchoMqModule, Processor, QueueService, type Job } from '../../src/index.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { startApp } from '../helpers/nest.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'dist', 'go');
const N = 2000;
const GO_TO_TS = randomQueue('interop-ts');

function ensureBinaries(): void {
  if (['echomq-worker', 'echomq-produce', 'echomq-bus'].every((b) => existsSync(join(BIN, b)))) return;
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'build-go.sh')], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('scripts/build-go.sh failed: the Go peer did not build');
}

interface GoProcess {
  readonly proc: ChildProcess;
  readonly lines: string[];
  readonly stderr: string[];
  readonly exited: Promise<number | null>;
}

const children: GoProcess[] = [];
/** Closers of the running test (relays), run after it. */
const afterThis: (() => Promise<void>)[] = [];

/** Script calls served so far (EVALSHA + EVAL), from INFO commandstats. */
async function scriptCalls(raw: { info(section: string): Promise<string> }): Promise<number> {
  const info = await raw.info('commandstats');
  return [...info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

function runGo(cmd: string, args: string[]): GoProcess {
  const proc = spawn(join(BIN, cmd), ['-url', testUrl(), '-lua', join(ROOT, 'lua'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const stderr: string[] = [];
  createInterface({ input: proc.stdout! }).on('line', (l) => lines.push(l));
  createInterface({ input: proc.stderr! }).on('line', (l) => stderr.push(l));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const child = { proc, lines, stderr, exited };
  children.push(child);
  return child;
}

/** Runs of each id on the TS side: attempt numbers, and whether the run succeeded. */
const tsRuns = new Map<string, { attempt: number; ok: boolean }[]>();

@Injectable()
class TsConsumer {
  @Processor(GO_TO_TS, { concurrency: 16, attempts: 3, backoff: { type: 'fixed', delayMs: 50 } })
  async work(job: Job<{ i: number; from: string; failOnce: boolean }>): Promise<{ by: string; i: number }> {
    const runs = tsRuns.get(job.id) ?? [];
    tsRuns.set(job.id, runs);
    if (job.payload.failOnce && job.attempt === 1) {
      runs.push({ attempt: job.attempt, ok: false });
      throw new Error('failing the first attempt on purpose');
    }
    runs.push({ attempt: job.attempt, ok: true });
    return { by: 'ts', i: job.payload.i };
  }
}

describe('interop with the Go peer', () => {
  const f = queueFixture();
  beforeAll(() => ensureBinaries(), 180_000);
  afterEach(async () => {
    for (const close of afterThis.splice(0)) await close();
  });
  afterEach(async () => {
    for (const c of children.splice(0)) {
      if (c.proc.exitCode === null) c.proc.kill('SIGTERM');
      await c.exited;
    }
  });

  test('a TS producer and a Go consumer: every job done exactly once, results visible from TS', async () => {
    const q = randomQueue('interop-go');
    const ids: string[] = [];
    for (let start = 0; start < N; start += 1000) {
      const items = Array.from({ length: Math.min(1000, N - start) }, (_, k) => ({ payload: { i: start + k, failOnce: (start + k) % 10 === 0 } }));
      ids.push(...(await f.queues.enqueueMany(q, items)));
    }
    const worker = runGo('echomq-worker', ['-queue', q, '-concurrency', '16', '-backoff', 'f:50', '-keep-done', String(2 * N)]);
    const okLines = () => worker.lines.filter((l) => l.endsWith(' ok')).length;
    await eventually(() => okLines() >= N, 60_000, `the Go worker to finish ${N} jobs (stderr: ${worker.stderr.slice(-3).join(' | ')})`);
    // Idle, the Go loop blocks on the wake list: no claim storm while nothing is pending.
    const before = await scriptCalls(f.raw);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await scriptCalls(f.raw)) - before).toBeLessThanOrEqual(3);
    worker.proc.kill('SIGTERM');
    expect(await worker.exited).toBe(0);

    const runs = new Map<string, string[]>();
    for (const l of worker.lines.filter((x) => x.startsWith('ran '))) {
      const [, id, attempt, outcome] = l.split(' ');
      runs.set(id, [...(runs.get(id) ?? []), `${attempt} ${outcome}`]);
    }
    expect(runs.size).toBe(N);
    for (const [k, id] of ids.entries()) {
      expect([id, runs.get(id)]).toEqual([id, k % 10 === 0 ? ['1 failed', '2 ok'] : ['1 ok']]);
    }
    const counts = await f.queues.counts(q);
    expect(counts).toMatchObject({ pending: 0, active: 0, scheduled: 0, dead: 0, done: N });
    for (const [k, id] of ids.entries()) {
      const job = await f.queues.getJob<{ i: number }, { by: string; attempt: number; payload: { i: number } }>(q, id);
      const attempt = k % 10 === 0 ? 2 : 1;
      expect([id, job?.status, job?.attempts, job?.result]).toEqual([id, 'done', attempt, { by: 'go', attempt, payload: { i: k, failOnce: k % 10 === 0 } }]);
      // The Go peer claims with `stamp` and retries with its worker: the attempt history is whole.
      const seen = job?.attemptHistory.map((a) => [a.attempt, a.outcome, a.startedAt !== undefined, a.worker ? /^.+:\d+$/.test(a.worker) : 'none']);
      expect([id, seen]).toEqual([id, attempt === 2 ? [[1, 'failed', true, true], [2, 'done', true, 'none']] : [[1, 'done', true, 'none']]]);
    }
  }, 120_000);

  test('a Go producer and a TS @Processor: every job done exactly once, results visible from Go', async () => {
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, queues: { [GO_TO_TS]: { keepDone: 2 * N } } })],
      providers: [TsConsumer],
    }).compile();
    const app = mod.createNestApplication({ logger: false });
    await app.init();
    try {
      const producer = runGo('echomq-produce', ['-queue', GO_TO_TS, '-n', String(N), '-fail-every', '10', '-wait', '60s']);
      const code = await producer.exited;
      expect([code, producer.stderr.join('\n')]).toEqual([0, '']);
      const results = producer.lines.map((l) => JSON.parse(l) as { id: string; status: string; attempts: string; result: string });
      expect(results).toHaveLength(N);
      expect(new Set(results.map((r) => r.id)).size).toBe(N);
      results.forEach((r, i) => {
        const failed = i % 10 === 0;
        expect([r.id, r.status, r.attempts, JSON.parse(r.result)]).toEqual([r.id, 'done', failed ? '2' : '1', { by: 'ts', i }]);
        expect([r.id, tsRuns.get(r.id)]).toEqual([r.id, failed ? [{ attempt: 1, ok: false }, { attempt: 2, ok: true }] : [{ attempt: 1, ok: true }]]);
      });
      expect(tsRuns.size).toBe(N);
      const view = await app.get(QueueService).getJob(GO_TO_TS, results[1].id);
      expect(view?.payload).toEqual({ i: 1, from: 'go', failOnce: false });
    } finally {
      await app.close();
    }
  }, 120_000);

  test('a TS flow whose children a Go worker runs and the Go relay relays: the TS parent runs with every result', async () => {
    const parentQ = randomQueue('flow-ts-parent');
    const kidsQ = randomQueue('flow-go-kids');
    // A producer whose relay is closed: flow-add's creation entries are signalled, not self-relayed,
    // and no TS relay watches either queue. Every hand-off goes through the Go relay.
    const producer = new QueueService(f.conn);
    await producer.flows.close();
    const worker = runGo('echomq-worker', ['-queue', kidsQ, '-concurrency', '8', '-backoff', 'f:50', '-relay', `${parentQ},${kidsQ}`]);
    await eventually(() => worker.lines.includes(`ready ${kidsQ}`), 10_000, 'the Go worker to start');
    const parentRuns: { id: string; results: unknown[] }[] = [];
    const { consumer } = await startConsumer(f.conn, parentQ, async (job) => {
      const kids = await producer.flows.children<{ by: string; attempt: number; payload: { i: number } }>(parentQ, job.id);
      parentRuns.push({ id: job.id, results: kids.list.map((k) => k.result ?? k.error) });
      return { sum: kids.list.reduce((s, k) => s + (k.result?.payload.i ?? 0), 0), n: kids.list.length };
    }, { concurrency: 2, attempts: 1 });
    f.consumers.push(consumer);
    const children = Array.from({ length: 20 }, (_, i) => ({
      queue: kidsQ,
      key: `k${i}`,
      payload: { i, failOnce: i % 5 === 0, fatal: i === 7 },
      onFailure: i === 7 ? ('continue' as const) : ('fail' as const),
    }));
    const flow = await producer.flow({ queue: parentQ, payload: { root: true }, children });
    await eventually(async () => (await f.queues.getJob(parentQ, flow.id))?.status === 'done', 20_000, `the TS parent to finish (Go stderr: ${worker.stderr.slice(-3).join(' | ')})`);
    expect(parentRuns).toHaveLength(1);
    const parent = await f.queues.getJob<unknown, { sum: number; n: number }>(parentQ, flow.id);
    expect(parent?.result).toEqual({ sum: 190 - 7, n: 20 });
    const byKey = new Map(parent?.children?.map((c) => [c.key, c]));
    for (let i = 0; i < 20; i++) {
      const c = byKey.get(`k${i}`);
      if (i === 7) expect(c).toMatchObject({ outcome: 'failed', error: 'Error: fatal on purpose' });
      else expect(c).toMatchObject({ outcome: 'done', result: { by: 'go', attempt: i % 5 === 0 ? 2 : 1, flow: 'c', payload: children[i].payload } });
    }
    // The children were run by Go only, each once per attempt, and every outbox was drained.
    const ran = worker.lines.filter((l) => l.startsWith('ran '));
    expect(ran).toHaveLength(20 + 4);
    for (const q of [parentQ, kidsQ]) await eventually(async () => (await f.raw.hlen(`emq:{${q}}:outbox`)) === 0, 5000, `the outbox of ${q} to drain`);
  }, 60_000);

  test('a Go-consumed parent whose children a TS consumer runs (TS relay): the Go parent sees every result', async () => {
    const parentQ = randomQueue('flow-go-parent');
    const kidsQ = randomQueue('flow-ts-kids');
    const worker = runGo('echomq-worker', ['-queue', parentQ, '-concurrency', '4']);
    await eventually(() => worker.lines.includes(`ready ${parentQ}`), 10_000, 'the Go worker to start');
    const { consumer } = await startConsumer(f.conn, kidsQ, (job) => {
      const p = job.payload as { i: number };
      if (p.i === 3) throw new Error('three is not welcome');
      return { doubled: p.i * 2 };
    }, { concurrency: 8, attempts: 1 });
    f.consumers.push(consumer);
    const producer = new QueueService(f.conn); // its relay watches both queues of the flow
    afterThis.push(() => producer.flows.close());
    const flow = await producer.flow({
      queue: parentQ,
      payload: { root: true },
      children: Array.from({ length: 10 }, (_, i) => ({ queue: kidsQ, key: `k${i}`, payload: { i }, onFailure: i === 3 ? ('ignore' as const) : ('fail' as const) })),
    });
    await eventually(async () => (await f.queues.getJob(parentQ, flow.id))?.status === 'done', 20_000, `the Go parent to finish (Go stderr: ${worker.stderr.slice(-3).join(' | ')})`);
    const parent = await f.queues.getJob<unknown, { by: string; flow: string; children: { id: string; key: string; queue: string; outcome: string; result?: unknown; error?: string }[] }>(parentQ, flow.id);
    expect(parent?.result?.by).toBe('go');
    expect(parent?.result?.flow).toBe('p');
    const kids = parent?.result?.children ?? [];
    expect(kids.map((k) => k.key)).toEqual(Array.from({ length: 10 }, (_, i) => `k${i}`));
    kids.forEach((k, i) => {
      expect(k.id).toBe(flow.children[i].id);
      expect(k.queue).toBe(kidsQ);
      if (i === 3) expect(k).toMatchObject({ outcome: 'failed', error: 'Error: three is not welcome' });
      else expect(k).toMatchObject({ outcome: 'done', result: { doubled: i * 2 } });
    });
    expect(worker.lines.filter((l) => l.startsWith(`ran ${flow.id} `))).toEqual([`ran ${flow.id} 1 ok`]);
  }, 60_000);

  test('a lane cap declared by a Nest app holds for a Go worker of concurrency 10 (the Go peer knows only the wire)', async () => {
    const q = randomQueue('go-gcap');
    const CAP = 2;
    // A producer-only Nest app declares the cap in its options: bootstrap stores it (policy.lua).
    const app = await startApp([EchoMqModule.forRoot({ connection: { url: testUrl() }, consumers: false, queues: { [q]: { lanes: { concurrency: CAP } } } })]);
    afterThis.push(() => app.close());
    expect((await f.queues.policy(q)).lanePolicy).toMatch(/^\*=2,/);
    await f.queues.enqueueMany(q, [
      ...Array.from({ length: 24 }, (_, i) => ({ payload: { i, g: 'capped' }, opts: { lane: 'capped' } })),
      ...Array.from({ length: 24 }, (_, i) => ({ payload: { i, g: 'other' }, opts: { lane: 'other' } })),
      ...Array.from({ length: 24 }, (_, i) => ({ payload: { i } })),
    ]);
    const worker = runGo('echomq-worker', ['-queue', q, '-concurrency', '10', '-events', '-sleep-ms', '40']);
    await eventually(() => worker.lines.filter((l) => l.startsWith('ran ')).length === 72, 30_000, `every job to run (Go stderr: ${worker.stderr.slice(-3).join(' | ')})`);
    // In flight per lane, replayed from the handler's start/end lines (printed in order).
    const now = new Map<string, number>();
    const peak = new Map<string, number>();
    let all = 0;
    let peakAll = 0;
    for (const l of worker.lines) {
      const [what, , g] = l.split(' ');
      if (what !== 'start' && what !== 'end') continue;
      const d = what === 'start' ? 1 : -1;
      now.set(g, (now.get(g) ?? 0) + d);
      all += d;
      peak.set(g, Math.max(peak.get(g) ?? 0, now.get(g) ?? 0));
      peakAll = Math.max(peakAll, all);
    }
    expect(peak.get('capped')).toBeLessThanOrEqual(CAP);
    expect(peak.get('other')).toBeLessThanOrEqual(CAP);
    expect(peak.get('capped')).toBeGreaterThanOrEqual(1);
    expect(peakAll).toBeGreaterThan(CAP); // the worker does run more at once: the cap is per lane
    expect(peakAll).toBeLessThanOrEqual(10);
    await eventually(async () => (await f.queues.counts(q)).done === 72, 5000, 'every job done');
    expect(await f.queues.counts(q)).toMatchObject({ pending: 0, active: 0, dead: 0, done: 72 });
  }, 60_000);

  test('a Go consumer group reads what TS publishes: acked once, a failed event re-delivered, a poison one dead-lettered', async () => {
    const topic = randomQueue('bus-go');
    const bus = new BusService(f.conn, { trimIntervalMs: 0 });
    afterThis.push(() => bus.close());
    const payloads = Array.from({ length: 40 }, (_, i) => ({ i, failOnce: i % 10 === 3, poison: i === 17 }));
    const ids = await bus.publishMany(topic, payloads);
    const reader = runGo('echomq-bus', ['-topic', topic, '-group', 'go-readers', '-consumer', 'go-1', '-concurrency', '4', '-max-deliveries', '3', '-ack-timeout-ms', '300']);
    await eventually(
      () => reader.lines.some((l) => l.startsWith('dead ')) && reader.lines.filter((l) => l.endsWith(' ok')).length === 39,
      15_000,
      `the Go member to handle every event (stderr: ${reader.stderr.slice(-3).join(' | ')})`,
    );
    expect(reader.lines.filter((l) => l.startsWith('dead '))).toEqual([`dead ${ids[17]} 3`]);
    const runs = new Map<string, string[]>();
    for (const l of reader.lines.filter((x) => x.startsWith('got '))) {
      const [, id, n, outcome] = l.split(' ');
      runs.set(id, [...(runs.get(id) ?? []), `${n} ${outcome}`]);
    }
    ids.forEach((id, i) => {
      const want = i === 17 ? ['1 failed', '2 failed', '3 failed'] : i % 10 === 3 ? ['1 failed', '2 ok'] : ['1 ok'];
      expect([i, runs.get(id)]).toEqual([i, want]);
    });
    const dead = await bus.deadLetters(topic);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ id: ids[17], group: 'go-readers', consumer: 'go-1', deliveries: 3, error: 'Error: poison', payload: payloads[17] });
    const [pendingCount] = (await f.raw.xpending(`emq:{${topic}}:bus:log`, 'go-readers')) as [number];
    expect(pendingCount).toBe(0);
  }, 60_000);
});
