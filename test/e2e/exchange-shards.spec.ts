/**
 * Shard ownership and bounded growth of the sample exchange: each shard held by exactly one
 * instance through leader election, handed over on a clean stop and after a SIGKILL, its own
 * state fenced by the term's token; rebuilds from a snapshot plus the log's tail equal to a full
 * replay; the shard log trimmed below the snapshot; order views of ended orders expiring.
 */
import { randomUUID } from 'node:crypto';
import { BusService, QueueService } from '../../src/index.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import type { Command, OrderState, PlaceCommand } from '../../sample-app/engine/engine.types.js';
import { SHARDS, shardOf } from '../../sample-app/engine/ids.js';
import { MatchingEngine } from '../../sample-app/engine/matching-engine.js';
import { commandTopic } from '../../sample-app/exchange.names.js';
import { BookHolder } from '../../sample-app/matching/book-holder.js';
import { LogGapError, ShardRun } from '../../sample-app/matching/shard-run.js';
import { ExchangeStore, StaleTokenError } from '../../sample-app/store/exchange.store.js';
import { logOf, spawnInstance, startLocal, until, type ChildInstance, type LocalInstance } from './exchange.helpers.js';

const SYMBOLS = ['ACME', 'BOLT', 'CRUX', 'DUNE', 'EPIC', 'FLUX'];
/** The holders' lease (DEFAULT_MATCHING.leaseMs). */
const LEASE_MS = 2000;

/** `n` limit orders that rest (buys below 100, sells above), every 7th followed by a cancel of an earlier one. */
function restingFlow(n: number, symbols: readonly string[], tag: string): Command[] {
  const out: Command[] = [];
  const placed: PlaceCommand[] = [];
  for (let i = 0; i < n; i++) {
    const side = i % 2 === 0 ? 'buy' : 'sell';
    const price = side === 'buy' ? 900_000 + (i % 97) * 100 : 1_010_000 + (i % 89) * 100;
    const cmd: PlaceCommand = {
      kind: 'place',
      orderId: `${tag}-${i}`,
      clientOrderId: `${tag}-c${i}`,
      account: `acct-${tag}-${i % 5}`,
      symbol: symbols[i % symbols.length],
      side,
      type: 'limit',
      qty: 1 + (i % 13),
      priceTicks: String(price),
      acceptedAt: Date.now(),
    };
    out.push(cmd);
    placed.push(cmd);
    if (i % 7 === 6) {
      const victim = placed[(i * 31) % placed.length];
      out.push({ kind: 'cancel', orderId: victim.orderId, symbol: victim.symbol });
    }
  }
  return out;
}

/** Appends commands to their shards' logs (what intake does) and wakes the holders. */
async function append(bus: BusService, shardOfCmd: (c: Command) => number, cmds: readonly Command[]): Promise<void> {
  const by = new Map<number, Command[]>();
  for (const c of cmds) by.set(shardOfCmd(c), [...(by.get(shardOfCmd(c)) ?? []), c]);
  for (const [shard, list] of by) {
    for (let i = 0; i < list.length; i += 1000) await bus.publishMany<Command>(commandTopic(shard), list.slice(i, i + 1000));
    await bus.signal(commandTopic(shard), { n: list.length });
  }
}

/** A pure replay of a shard's log: the engine and every order's last state. */
async function replay(bus: BusService, shard: number): Promise<{ engine: MatchingEngine; states: Map<string, OrderState> }> {
  const engine = new MatchingEngine(shard);
  const states = new Map<string, OrderState>();
  for (const e of await logOf<Command>(bus, commandTopic(shard))) for (const s of engine.apply(e.payload, e.at).orders) states.set(s.orderId, s);
  return { engine, states };
}

describe('sample exchange: shard ownership, snapshots and retention', () => {
  let valkey: EmbeddedValkey;
  let a: LocalInstance | undefined;
  let b: LocalInstance | undefined;
  let c: LocalInstance | undefined;
  let child: ChildInstance | undefined;

  beforeAll(async () => {
    valkey = await startEmbeddedValkey();
    a = await startLocal(valkey.url, 'A');
    b = await startLocal(valkey.url, 'B');
  });
  afterAll(async () => {
    await child?.kill();
    for (const inst of [a, b, c]) await inst?.app.close();
    await valkey?.stop();
  });

  it('holds each shard on exactly one instance and hands them over on a clean stop, losing no order', async () => {
    const holderA = a!.app.get(BookHolder);
    const holderB = b!.app.get(BookHolder);
    await until(async () => holderA.held().length + holderB.held().length === SHARDS, 10_000, () => `held ${holderA.held()} / ${holderB.held()}`);
    expect([...holderA.held(), ...holderB.held()].sort()).toEqual(Array.from({ length: SHARDS }, (_, i) => i));
    // The leases agree: every shard has an owner, and the owner is the instance that says it holds it.
    const leases = await holderA.holders();
    expect(leases.every((h) => h.owner !== null && h.token !== null)).toBe(true);
    expect(leases.filter((h) => h.mine).map((h) => h.shard)).toEqual(holderA.held());

    const tag = randomUUID().slice(0, 8);
    const cmds = restingFlow(1200, SYMBOLS, tag);
    const bySymbol = (cmd: Command): number => shardOf(cmd.symbol);
    // Orders keep coming while the instance holding shards stops.
    const leaving = holderA.held().length > 0 ? a! : b!;
    const staying = leaving === a ? b! : a!;
    const sbus = staying.app.get(BusService);
    const feeding = (async () => {
      for (let i = 0; i < cmds.length; i += 100) {
        await append(sbus, bySymbol, cmds.slice(i, i + 100));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    await leaving.app.close();
    if (leaving === a) a = undefined;
    else b = undefined;
    const stayingHolder = staying.app.get(BookHolder);
    await until(async () => stayingHolder.held().length === SHARDS, LEASE_MS + 1000, () => `held ${stayingHolder.held()}`);
    const handover = Date.now() - t0;
    console.log(`clean stop: the other instance held every shard ${handover} ms after close() began`);
    await feeding;

    // No order lost: every shard's effects reach the end of its log, and every order's view is the pure replay's.
    const st = staying.app.get(ExchangeStore);
    for (let s = 0; s < SHARDS; s++) {
      const len = (await logOf(sbus, commandTopic(s))).length;
      await until(async () => (await st.cursor(s)) === len - 1, 10_000, () => `shard ${s} behind`);
    }
    const expected = new Map<string, OrderState>();
    for (let s = 0; s < SHARDS; s++) for (const [id, v] of (await replay(sbus, s)).states) if (id.startsWith(tag)) expected.set(id, v);
    expect(expected.size).toBe(1200);
    const views = await Promise.all([...expected.keys()].map((id) => st.view(id)));
    expect(views).toEqual([...expected.values()]);
  }, 60_000);

  it('refuses a cursor or snapshot write carrying a token older than the shard has seen', async () => {
    const store = (a ?? b)!.app.get(ExchangeStore);
    const shard = 1000 + Math.floor(Math.random() * 1e6);
    const old = 1_700_000_000_000_000n;
    await store.claimShard(shard, old);
    await store.raiseCursor(shard, old, 5);
    const engine = new MatchingEngine(shard).snapshot();
    expect(await store.writeSnapshot(shard, old, { engine: { ...engine, position: 6 }, lastId: 'x', lastAt: 0, takenAt: 0, token: String(old) })).toBe(true);
    await store.claimShard(shard, old + 1n); // a successor's term
    await expect(store.raiseCursor(shard, old, 9)).rejects.toBeInstanceOf(StaleTokenError);
    await expect(store.writeSnapshot(shard, old, { engine: { ...engine, position: 9 }, lastId: 'y', lastAt: 0, takenAt: 0, token: String(old) })).rejects.toThrow(/EMQ_STALE_TOKEN/);
    await expect(store.claimShard(shard, old)).rejects.toBeInstanceOf(StaleTokenError);
    expect(await store.cursor(shard)).toBe(5);
    expect((await store.snapshot(shard))?.lastId).toBe('x');
    // The successor's own writes go through, and a snapshot never moves back.
    await store.raiseCursor(shard, old + 1n, 9);
    expect(await store.cursor(shard)).toBe(9);
    expect(await store.writeSnapshot(shard, old + 1n, { engine: { ...engine, position: 4 }, lastId: 'z', lastAt: 0, takenAt: 0, token: String(old + 1n) })).toBe(false);
    await store.client.del(`x:{book:${shard}}:fence`, `x:{book:${shard}}:cursor`, `x:{book:${shard}}:snap`);
  });

  it('rebuilds from the snapshot plus the tail exactly as a full replay, and trims the log below the snapshot', async () => {
    const app = (a ?? b)!.app;
    const deps = { queues: app.get(QueueService), bus: app.get(BusService), store: app.get(ExchangeStore) };
    // A shard no instance holds (the holders elect 0..SHARDS-1 only), its log this test's own.
    const shard = 1000 + Math.floor(Math.random() * 1e6);
    const tag = randomUUID().slice(0, 8);
    const opts = { snapshotEvery: 1000, snapshotMs: 3_600_000, logRetentionMs: 3_600_000 };
    const signal = new AbortController().signal;
    let token = BigInt(Date.now()) * 1000n;
    const term = async (): Promise<bigint> => {
      token += 1n;
      await deps.store.claimShard(shard, token);
      return token;
    };
    const cmds = restingFlow(2400, SYMBOLS, tag);
    await append(deps.bus, () => shard, cmds.slice(0, 2500));
    const first = new ShardRun(shard, deps, await term(), opts);
    expect(await first.recover(signal)).toEqual({ fromPosition: 0, replayed: 2500 });
    expect((await deps.store.snapshot(shard))?.engine.position).toBe(2000);
    await append(deps.bus, () => shard, cmds.slice(2500));

    const t1 = Date.now();
    const fromSnap = new ShardRun(shard, deps, await term(), opts);
    expect(await fromSnap.recover(signal)).toEqual({ fromPosition: 2000, replayed: cmds.length - 2000 });
    const snapMs = Date.now() - t1;
    const t2 = Date.now();
    const full = new ShardRun(shard, deps, await term(), opts);
    expect(await full.recover(signal, false)).toEqual({ fromPosition: 0, replayed: cmds.length });
    const fullMs = Date.now() - t2;
    console.log(`rebuild of ${cmds.length} commands: snapshot + tail ${snapMs} ms, full replay ${fullMs} ms`);
    const pure = await replay(deps.bus, shard);
    expect(fromSnap.matching.snapshot()).toEqual(pure.engine.snapshot());
    expect(full.matching.snapshot()).toEqual(pure.engine.snapshot());
    // Order states: the views (made by the first run and the tail's) are the pure replay's.
    expect(await Promise.all([...pure.states.keys()].map((id) => deps.store.view(id)))).toEqual([...pure.states.values()]);

    // Retention: entries older than the margin go, the snapshot's tail stays, a rebuild still matches.
    const short = { ...opts, logRetentionMs: 1500 };
    const run = new ShardRun(shard, deps, await term(), short);
    await run.recover(signal);
    expect(await run.snapshotIfDue(true)).toBe(true);
    await new Promise((r) => setTimeout(r, 1600));
    const tail = restingFlow(30, SYMBOLS, `${tag}t`);
    await append(deps.bus, () => shard, tail);
    await run.retain();
    await deps.bus.trim(commandTopic(shard));
    const left = await logOf<Command>(deps.bus, commandTopic(shard));
    expect(left.map((e) => e.payload)).toEqual(tail);
    const again = new ShardRun(shard, deps, await term(), short);
    expect(await again.recover(signal)).toEqual({ fromPosition: cmds.length, replayed: tail.length });
    const ref = MatchingEngine.restore(shard, run.matching.snapshot());
    for (const e of left) ref.apply(e.payload, e.at);
    expect(again.matching.snapshot()).toEqual(ref.snapshot());
    // The superseded run cannot record what it does next: its token is below the fence.
    await expect(run.step()).rejects.toBeInstanceOf(StaleTokenError);
    // A log trimmed past the snapshot while the snapshot is younger than the retention (here by a
    // wrong policy) is refused, not matched with a hole in it.
    await deps.bus.setRetention(commandTopic(shard), { maxLen: 5, archive: false });
    await deps.bus.trim(commandTopic(shard));
    await expect(new ShardRun(shard, deps, await term(), opts).recover(signal)).rejects.toBeInstanceOf(LogGapError);
    await deps.store.client.del(`x:{book:${shard}}:fence`, `x:{book:${shard}}:cursor`, `x:{book:${shard}}:snap`);
  }, 60_000);

  it('expires the view of an ended order and keeps an open one', async () => {
    const store = (a ?? b)!.app.get(ExchangeStore);
    const tag = randomUUID().slice(0, 8);
    const base = { clientOrderId: 'c', account: 'acct', symbol: 'ACME', side: 'buy' as const, type: 'limit' as const, qty: 1, priceTicks: '1', acceptedAt: 0, filledNotionalTicks: '0' };
    const open: OrderState = { ...base, orderId: `${tag}-open`, filledQty: 0, status: 'open', seq: 1 };
    const done: OrderState = { ...base, orderId: `${tag}-done`, filledQty: 1, filledNotionalTicks: '1', status: 'filled', seq: 2 };
    await store.writeViews([open, done], 300);
    expect(await store.view(done.orderId)).toEqual(done);
    // A view is written only over an older one, and an ended view is final (a stale re-run's refusal does not replace it).
    await store.writeViews([{ ...done, seq: 1, status: 'open', filledQty: 0 }], 300);
    await store.writeViews([{ ...done, seq: 9, status: 'cancelled', filledQty: 0, reason: 'stale' }], 300);
    expect(await store.view(done.orderId)).toEqual(done);
    await new Promise((r) => setTimeout(r, 400));
    expect(await store.view(done.orderId)).toBeUndefined();
    expect(await store.view(open.orderId)).toEqual(open);
    await store.client.del(`x:{orders}:v:${open.orderId}`);
  });

  it('hands the shards of a SIGKILLed holder to the survivor within the lease plus a poll', async () => {
    const survivor = (a ?? b)!;
    child = await spawnInstance(valkey.url, 'doomed');
    const heldOn = async (base: string): Promise<number[]> => {
      const m = /holds shards \[([\d, ]*)\]/.exec(await (await fetch(`${base}/`)).text());
      return m?.[1] ? m[1].split(', ').map(Number) : [];
    };
    // The child takes every shard once the in-process survivor stops; then a new one starts and the child dies.
    await survivor.app.close();
    if (survivor === a) a = undefined;
    else b = undefined;
    await until(async () => (await heldOn(child!.base)).length === SHARDS, 10_000, () => 'the child did not take the shards');
    c = await startLocal(valkey.url, 'C');
    await child.kill();
    const killedAt = Date.now();
    const holder = c.app.get(BookHolder);
    await until(async () => holder.held().length === SHARDS, LEASE_MS + 3000, () => `held ${holder.held()}`);
    const failover = Date.now() - killedAt;
    console.log(`SIGKILL: the survivor held every shard ${failover} ms after the kill`);
    // Not before the dead holder's leases could lapse (renewed every lease/3), and within lease + poll + rebuild.
    expect(failover).toBeGreaterThanOrEqual(LEASE_MS / 2);
    expect(failover).toBeLessThan(LEASE_MS + 1000);
  }, 60_000);
});
