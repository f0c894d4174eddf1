import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AppModule } from '../../sample-app/app.module.js';
import type { OrderView } from '../../sample-app/orders/orders.controller.js';

/** The sample app over HTTP, against the run's throwaway Valkey (ECHOMQ_TEST_URL). */
describe('sample app: orders over HTTP', () => {
  let app: INestApplication;
  let base: string;
  // A symbol of its own, so leftovers of an earlier run on the same Valkey cannot match.
  const symbol = `T${Date.now().toString(36).toUpperCase()}`;

  const post = (body: unknown) =>
    fetch(`${base}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  const order = (over: Record<string, unknown> = {}) => ({ account: 'alice', side: 'buy', symbol, qty: 10, price: 101.5, ...over });

  async function place(body: unknown): Promise<string> {
    const res = await post(body);
    expect(res.status).toBe(202);
    const receipt = (await res.json()) as { id: string; status: string };
    expect(receipt.id).toMatch(/^job[0-9A-Za-z]{11}$/);
    expect(receipt.status).toBe('pending');
    return receipt.id;
  }

  async function settled(id: string, ms = 5000): Promise<OrderView> {
    const until = Date.now() + ms;
    for (;;) {
      const res = await fetch(`${base}/orders/${id}`);
      expect(res.status).toBe(200);
      const view = (await res.json()) as OrderView;
      if (view.status === 'done' || view.status === 'dead') return view;
      if (Date.now() > until) throw new Error(`order ${id} still ${view.status} after ${ms} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  beforeAll(async () => {
    const url = process.env.ECHOMQ_TEST_URL;
    if (!url) throw new Error('ECHOMQ_TEST_URL is not set: run through npm test (scripts/with-valkey)');
    const mod = await Test.createTestingModule({ imports: [AppModule.forRoot({ url })] }).compile();
    app = mod.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => app?.close());

  it('accepts an order, processes it, and shows the result', async () => {
    const id = await place(order({ account: 'bob', side: 'sell', qty: 10, price: 100 }));
    const view = await settled(id);
    expect(view).toMatchObject({
      id,
      status: 'done',
      attempts: 1,
      payload: { account: 'bob', side: 'sell', symbol, qty: 10, price: 100 },
      result: { accepted: true, fills: [], filledQty: 0, restingQty: 10 },
    });
    expect(view.error).toBeUndefined();
    expect(typeof view.createdAt).toBe('string');
  });

  it('matches a crossing buy against the resting sell at the maker price, price-time first', async () => {
    const better = await place(order({ account: 'carol', side: 'sell', qty: 3, price: 99.5 }));
    await settled(better);
    const buy = await place(order({ account: 'alice', side: 'buy', qty: 5, price: 101.5 }));
    const view = await settled(buy);
    expect(view.status).toBe('done');
    expect(view.result?.filledQty).toBe(5);
    expect(view.result?.restingQty).toBe(0);
    expect(view.result?.fills.map((f) => [f.sellAccount, f.price, f.qty])).toEqual([
      ['carol', 99.5, 3],
      ['bob', 100, 2],
    ]);
    expect(view.result?.fills.every((f) => f.buyOrderId === buy && f.buyAccount === 'alice')).toBe(true);
  });

  it('counts jobs per status', async () => {
    const res = await fetch(`${base}/orders/stats/counts`);
    expect(res.status).toBe(200);
    const counts = (await res.json()) as Record<string, number>;
    expect(counts.done).toBeGreaterThanOrEqual(3);
    expect(Object.keys(counts).sort()).toEqual(['active', 'cancelled', 'dead', 'done', 'pending', 'scheduled']);
  });

  it('refuses bad orders with 400 and every problem', async () => {
    const res = await post({ account: 'alice', side: 'hold', symbol: 'acme', qty: 0, price: -1, extra: true });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { statusCode: number; message: string; problems: string[] };
    expect(body.statusCode).toBe(400);
    expect(body.message).toMatch(/^invalid order: /);
    expect(body.message).toContain('side must be "buy" or "sell"');
    expect(body.problems).toEqual([
      'unknown field "extra"',
      'side must be "buy" or "sell"; got "hold"',
      'symbol must be 1-12 uppercase letters, digits or ".", starting with a letter; got "acme"',
      'qty must be positive; got 0',
      'price must be positive; got -1',
    ]);

    const missing = await post({ side: 'buy' });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { problems: string[] }).problems).toEqual([
      'account is required',
      'symbol is required',
      'qty is required',
      'price is required',
    ]);

    expect((await post([1, 2])).status).toBe(400);
    expect((await post(order({ account: 'no spaces allowed' }))).status).toBe(400);
    expect((await post(order({ qty: 1.5 }))).status).toBe(400);
    expect((await post(order({ price: '101.5' }))).status).toBe(400);
    const badJson = await fetch(`${base}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"account":' });
    expect(badJson.status).toBe(400);
  });

  it('answers 400 with EMQ_BAD_ID for a malformed id', async () => {
    const res = await fetch(`${base}/orders/not-an-id`);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ statusCode: 400, code: 'EMQ_BAD_ID' });
  });

  it('answers 404 for a well-formed id that does not exist', async () => {
    const res = await fetch(`${base}/orders/job00000000000`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ statusCode: 404 });
  });
});
