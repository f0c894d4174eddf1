/**
 * The sample exchange survives a SIGKILL of the instance holding every book, mid-load: a child
 * process takes the shards first, orders flow to it and to an instance in this process, the child
 * is killed, and requests it dropped are retried on the survivor with the same client order id.
 * Nothing accepted is lost: every order is on its shard's log, the survivor's rebuilt books made
 * the trades the engine alone makes from those logs, and each trade is settled exactly once.
 */
import { BusService, QueueService } from '../../src/index.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { SHARDS, settlementJobId } from '../../sample-app/engine/ids.js';
import { SETTLEMENTS_QUEUE } from '../../sample-app/exchange.names.js';
import { ExchangeStore } from '../../sample-app/store/exchange.store.js';
import { holdingsOf, orderFlow, placeAll, publishedTrades, quiesce, referenceRun, spawnInstance, startLocal, until, type ChildInstance, type LocalInstance } from './exchange.helpers.js';

const SYMBOLS = ['ACME', 'BOLT', 'CRUX', 'DUNE', 'EPIC', 'FLUX'];

describe('sample exchange: killing the instance that holds the books mid-load', () => {
  let valkey: EmbeddedValkey;
  let child: ChildInstance | undefined;
  let local: LocalInstance;

  beforeAll(async () => {
    valkey = await startEmbeddedValkey();
  });
  afterAll(async () => {
    await child?.kill();
    await local?.app.close();
    await valkey?.stop();
  });

  it('loses no order, no trade and no settlement', async () => {
    child = await spawnInstance(valkey.url, 'doomed');
    const holds = async (base: string): Promise<number[]> => {
      const m = /holds shards \[([\d, ]*)\]/.exec(await (await fetch(`${base}/`)).text());
      return m?.[1] ? m[1].split(', ').map(Number) : [];
    };
    await until(async () => (await holds(child!.base)).length === SHARDS, 10_000, () => 'the child did not take the shards');
    local = await startLocal(valkey.url, 'survivor');
    const bus = local.app.get(BusService);
    const queues = local.app.get(QueueService);
    const store = local.app.get(ExchangeStore);

    let alive = [child.base, local.base];
    const orders = orderFlow(2, 900, SYMBOLS, 'k');
    const placing = placeAll(() => alive, orders, 12);
    // Kill the holder once a third of the orders are in and its books are busy.
    await until(async () => (await store.cursor(0)) + (await store.cursor(1)) + (await store.cursor(2)) + (await store.cursor(3)) > 250, 20_000, () => 'no progress');
    alive = [local.base];
    await child.kill();
    const killedAt = Date.now();
    // The survivor takes the shards once their leases (2 s) expire and its reaper hands them over.
    await until(async () => (await holds(local.base)).length === SHARDS, 15_000, () => 'the survivor did not take the shards');
    const failoverMs = Date.now() - killedAt;
    // Not before the dead holder's leases could expire; measured 2.0–2.3 s.
    expect(failoverMs).toBeGreaterThanOrEqual(1000);
    const ids = await placing;
    expect(ids.size).toBe(orders.length);

    await quiesce(queues, bus, store, 40_000);
    const ref = await referenceRun(bus);
    for (const id of ids.values()) expect(ref.placed.has(id)).toBe(true);
    const published = await publishedTrades(bus);
    expect(published.length).toBeGreaterThan(100);
    expect(published).toEqual(ref.trades.sort((x, y) => x.shard - y.shard || x.tradeSeq - y.tradeSeq));
    expect(await store.settledCount()).toBe(published.length);
    const jobs = await Promise.all(published.map((t) => queues.getJob(SETTLEMENTS_QUEUE, settlementJobId(t, 'settle'))));
    expect(jobs.filter((j) => j?.status !== 'done')).toEqual([]);
    for (const [account, h] of holdingsOf(published)) expect(await store.holdings(account)).toEqual(h);
    // Every order's view agrees with the engine run alone.
    const views = await Promise.all([...ids.values()].map((id) => store.view(id)));
    expect(views).toEqual([...ids.values()].map((id) => ref.order(id)));
  }, 60_000);
});
