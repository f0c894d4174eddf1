import 'reflect-metadata';
import { jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { BusService, CacheService, Processor, QueueAdmin, type Job } from '../../src/index.js';
import { topicKeys } from '../../src/protocol.js';
import { buryJobs, startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

// Issue 38: a tour of every page of the dashboard in headless Chromium over a seeded data set:
// each page answers 200, renders its main region, breaks no CSP rule, and is photographed.
// `npm run docs:screenshots` runs this on a fresh Valkey with DASHBOARD_SCREENSHOT_DIR set to
// docs/images/dashboard (readable queue names then: nothing else shares that Valkey).
jest.setTimeout(180_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = process.env.DASHBOARD_SCREENSHOT_DIR;
const name = (readable: string): string => (SHOTS ? readable : randomQueue(readable));
const ORDERS = name('orders');
const EMAILS = name('emails');
const SETTLE = name('settlements');
const TOPIC = name('trades');
const NS = name('quotes');
const f = queueFixture();

@Injectable()
class Workers {
  @Processor(ORDERS, { concurrency: 2, attempts: 3, backoff: { type: 'fixed', delayMs: 50 } })
  async order(job: Job<{ n: number; fail?: boolean }>): Promise<{ n: number; total: string }> {
    await new Promise((r) => setTimeout(r, 5 + (job.payload.n % 7) * 3));
    if (job.payload.fail) throw new Error(`card declined for order ${job.payload.n}`);
    return { n: job.payload.n, total: `${(job.payload.n * 12.5).toFixed(2)} EUR` };
  }

  @Processor(SETTLE, { concurrency: 1 })
  async settle(job: Job<number>): Promise<number> {
    return job.payload * 2;
  }
}

let d: DashboardTestApp;
let browser: Browser;
let page: Page;
const cspErrors: string[] = [];
const seeded: { dead?: string; failedThenDone?: string; scheduled?: string; parent?: string } = {};

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/ensure-chromium.sh (as root) first`);
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  d = await startDashboardApp({ path: '/echomq', refreshMs: 0 }, [Workers], true);
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  await page.setExtraHTTPHeaders({ 'x-let-in': 'yes' });
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspErrors.push(m.text());
  });

  // The data set: done, failed-then-done, dead, scheduled, pending jobs; a flow; a topic; a cache.
  for (let n = 1; n <= 30; n++) await f.queues.enqueue(ORDERS, { n });
  seeded.failedThenDone = await f.queues.enqueue(ORDERS, { n: 99, fail: true }, { attempts: 3 });
  await buryJobs(f.conn, f.queues, EMAILS, [{ to: 'ana@example.com', template: 'receipt' }]).then(([id]) => (seeded.dead = id));
  seeded.scheduled = await f.queues.enqueue(EMAILS, { to: 'bo@example.com', template: 'reminder' }, { delay: 3_600_000 });
  await f.queues.enqueue(EMAILS, { to: 'cy@example.com', template: 'welcome' });
  const flow = await f.queues.flow({ queue: name('checkout'), payload: { cart: 7 }, children: [{ queue: SETTLE, payload: 3, key: 'charge' }, { queue: name('stock'), payload: { sku: 'A-1' }, key: 'reserve' }] });
  seeded.parent = `${flow.queue}/jobs/${flow.id}`;
  const bus = d.app.get(BusService);
  await bus.publishMany(TOPIC, [{ px: 101 }, { px: 102 }, { px: 103 }]);
  await f.raw.xgroup('CREATE', topicKeys(TOPIC).log, 'risk', '0');
  const cache = d.app.get(CacheService);
  await cache.set('EURUSD', { bid: 1.08 }, { namespace: NS });
  await cache.invalidate('EURUSD', { namespace: NS });
  await eventually(async () => (await f.queues.counts(ORDERS)).done >= 30, 30_000, 'the orders done');
  // The charts read what consumers flush to Valkey every 5 s: wait until the orders are in it.
  const admin = d.app.get(QueueAdmin);
  await eventually(async () => (await admin.metrics(ORDERS)).points.reduce((n, p) => n + p.completed, 0) >= 30, 30_000, 'the orders in the stored history');
}, 120_000);

afterAll(async () => {
  await f.queues?.flows.close();
  await browser?.close();
  await d?.app.close();
});

/** Opens `path`, checks it rendered (200, `<main>` with `selector`), and photographs it as `<file>.png`. */
async function visit(path: string, selector: string, file: string): Promise<void> {
  const res = await page.goto(`${d.origin}/echomq${path}`, { waitUntil: 'load' });
  expect(res?.status()).toBe(200);
  expect(await page.$(`main ${selector}`)).not.toBeNull();
  const png = Buffer.from(await page.screenshot({ type: 'png', fullPage: true }));
  expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  if (SHOTS) writeFileSync(join(SHOTS, `${file}.png`), png);
}

describe('a tour of every dashboard page', () => {
  it('the overview lists the seeded queues with coloured counts', async () => {
    await visit(SHOTS ? '/' : `/?after=${ORDERS.slice(0, -1)}`, `tr[data-queue="${ORDERS}"]`, 'overview');
  });

  it('a queue page: tabs with state badges, done jobs with relative times (exact on hover)', async () => {
    await visit(`/queues/${ORDERS}?status=done`, '#jobs tbody tr', 'queue');
    expect(await page.$eval('#counts [data-state="done"]', (el) => getComputedStyle(el).backgroundColor)).not.toBe(await page.$eval('#counts [data-state="dead"]', (el) => getComputedStyle(el).backgroundColor));
    const title = await page.$eval('#jobs tbody time', (el) => el.getAttribute('title') ?? '');
    expect(new Date(title).toISOString()).toBe(title); // the exact instant on hover
  });

  it('a dead job: its error in full, Retry and Remove', async () => {
    await visit(`/queues/${EMAILS}/jobs/${seeded.dead}`, '[data-field="error"]', 'job-dead');
    expect(await page.$eval('[data-field="status"] [data-state]', (el) => el.textContent)).toBe('dead');
  });

  it('a job that failed on every attempt and is dead', async () => {
    await eventually(async () => (await f.queues.getJob(ORDERS, seeded.failedThenDone!))?.status === 'dead', 30_000, 'the failing order buried after 3 attempts');
    await visit(`/queues/${ORDERS}/jobs/${seeded.failedThenDone}`, '[data-field="error"]', 'job-failed');
  });

  it('a scheduled job with Run now and Cancel', async () => {
    await visit(`/queues/${EMAILS}/jobs/${seeded.scheduled}`, `form[action$="/promote"]`, 'job-scheduled');
  });

  it('the cancel confirmation page', async () => {
    const action = `/echomq/queues/${EMAILS}/jobs/${seeded.scheduled}/cancel`;
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(`form[action="${action}"] button`)]);
    expect(await page.$eval('#confirm-question', (el) => el.textContent)).toContain('Cancel job');
    if (SHOTS) writeFileSync(join(SHOTS, 'confirm.png'), Buffer.from(await page.screenshot({ type: 'png', fullPage: true })));
  });

  it("a flow parent with its children's states", async () => {
    await visit(`/queues/${seeded.parent}`, '#children tr[data-child]', 'flow-parent');
  });

  it('the Bus page with group lag', async () => {
    await eventually(async () => (await (await fetch(`${d.origin}/echomq/bus${SHOTS ? '' : `?after=${TOPIC.slice(0, -1)}`}`, { headers: { 'x-let-in': 'yes' } })).text()).includes(`data-topic="${TOPIC}"`), 5_000, 'the topic listed');
    await visit(SHOTS ? '/bus' : `/bus?after=${TOPIC.slice(0, -1)}`, `[data-topic="${TOPIC}"]`, 'bus');
  });

  it('the Cache page with its namespaces and counters', async () => {
    await visit(SHOTS ? '/cache' : `/cache?after=${NS.slice(0, -1)}`, `[data-namespace="${NS}"]`, 'cache');
  });

  it('broke no Content-Security-Policy rule on any page', () => {
    expect(cspErrors).toEqual([]);
  });
});
