import 'reflect-metadata';
import { jest } from '@jest/globals';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { startConsumer } from '../helpers/consumers.js';
import { startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

// Issue 38: the charts of the stored history in a real browser: axes with labelled ticks and
// units, a legend, the latency chart, the range links; the same numbers after a dashboard restart.
jest.setTimeout(120_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const f = queueFixture();
const Q = randomQueue('charts');

let d: DashboardTestApp | undefined;
let browser: Browser;
let page: Page;
const cspErrors: string[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/ensure-chromium.sh (as root) first`);
  // A consumer runs jobs of a few speeds and fails some, then stops: its stop flushes the history.
  for (let n = 0; n < 30; n++) await f.queues.enqueue(Q, { n, ms: 5 + (n % 6) * 15, fail: n % 10 === 9 }, n % 10 === 9 ? { attempts: 2 } : {});
  const { consumer } = await startConsumer(f.conn, Q, async (job) => {
    const p = job.payload as { ms: number; fail: boolean };
    await sleep(p.ms);
    if (p.fail) throw new Error('boom');
  }, { concurrency: 4 });
  await eventually(async () => (await f.queues.counts(Q)).done === 27 && (await f.queues.counts(Q)).dead === 3, 20_000, 'the jobs finished');
  await consumer.stop(2000);
  d = await startDashboardApp({ path: '/echomq', refreshMs: 500 });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 900 });
  await page.setExtraHTTPHeaders({ 'x-let-in': 'yes' });
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspErrors.push(`${m.text()} at ${JSON.stringify(m.location())}`);
  });
});
const apps: DashboardTestApp[] = [];
afterAll(async () => {
  await browser?.close();
  await d?.app.close();
  for (const a of apps) await a.app.close();
});

const texts = (p: Page, sel: string): Promise<string[]> => p.$$eval(sel, (els) => els.map((e) => e.textContent ?? ''));
const shot = async (p: Page, name: string): Promise<void> => {
  const png = Buffer.from(await p.screenshot({ type: 'png', fullPage: true }));
  expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  if (process.env.DASHBOARD_SCREENSHOT_DIR) writeFileSync(join(process.env.DASHBOARD_SCREENSHOT_DIR, name), png);
};

describe('the charts of the stored history in headless Chromium', () => {
  it("a queue's page: throughput and latency charts with labelled axes, units and a legend; range links", async () => {
    await page.goto(`${d!.origin}/echomq/queues/${Q}?status=done`, { waitUntil: 'load' });
    const caption = await page.$eval('#throughput-chart figcaption', (el) => el.textContent ?? '');
    expect(caption).toContain('27 completed, 3 failed, 3 dead');
    expect(await texts(page, '#throughput-chart .axis-title')).toEqual(['jobs/min', 'UTC']);
    const yTicks = await texts(page, '#throughput-chart .y-axis text.tick');
    expect(yTicks.length).toBeGreaterThanOrEqual(2);
    expect(yTicks[0]).toBe('0');
    for (const t of yTicks) expect(t).toMatch(/^\d+(\.\d+)?k?$/);
    const xTicks = await texts(page, '#throughput-chart .x-axis text.tick');
    expect(xTicks.length).toBeGreaterThanOrEqual(3);
    for (const t of xTicks) expect(t).toMatch(/^\d\d:\d\d$/);
    expect(await texts(page, '#throughput-chart .legend text')).toEqual(['completed', 'failed', 'dead']);
    // The latency chart: p50 / p95 run time, ticks as durations.
    expect(await texts(page, '#latency-chart .legend text')).toEqual(['p50', 'p95']);
    const lTicks = await texts(page, '#latency-chart .y-axis text.tick');
    for (const t of lTicks) expect(t).toMatch(/^\d+(\.\d+)? (ms|s|min)/);
    expect(await page.$eval('#latency-chart figcaption', (el) => el.textContent ?? '')).toMatch(/p50 \d+(\.\d+)? (ms|s)/);
    expect(await page.$$('#latency-chart polyline, #latency-chart circle')).not.toHaveLength(0);
    await shot(page, 'charts-queue.png');

    // The range links: 24 h reads the hourly rollups, the same counts.
    // Clicked inside the page in one step: the live refresh may swap the node between a
    // handle's lookup and its click ("Node is detached from document" on a loaded machine).
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.$eval('#ranges a[data-range="24h"]', (a) => (a as HTMLElement).click())]);
    expect(page.url()).toContain('status=done&range=24h');
    expect(await page.$eval('#ranges a.on', (el) => el.textContent)).toBe('24h');
    expect(await page.$eval('#throughput-chart figcaption', (el) => el.textContent ?? '')).toContain('27 completed, 3 failed, 3 dead');
    expect(cspErrors).toEqual([]);
  });

  it('the overview: the total chart with axes and a legend, a sparkline per queue; the same numbers after a dashboard restart', async () => {
    await page.goto(`${d!.origin}/echomq?after=${Q.slice(0, -1)}`, { waitUntil: 'load' });
    expect(await texts(page, '#throughput-chart .legend text')).toEqual(['completed', 'failed', 'dead']);
    expect((await texts(page, '#throughput-chart .y-axis text.tick')).length).toBeGreaterThanOrEqual(2);
    expect(await page.$eval(`tr[data-queue="${Q}"] svg.spark`, (el) => el.getAttribute('aria-label'))).toMatch(/^27 completed, 3 failed, 3 dead in 1 h/);
    await shot(page, 'charts-overview.png');

    // A new app instance (a restarted dashboard: nothing kept in memory) reads the same stored numbers.
    const again = await startDashboardApp({ path: '/echomq', refreshMs: 500 });
    try {
      await page.goto(`${again.origin}/echomq/queues/${Q}`, { waitUntil: 'load' });
      expect(await page.$eval('#throughput-chart figcaption', (el) => el.textContent ?? '')).toContain('27 completed, 3 failed, 3 dead');
      // A bad range is a 400 page, not a chart.
      expect((await fetch(`${again.origin}/echomq/queues/${Q}?range=2y`, { headers: { 'x-let-in': 'yes' } })).status).toBe(400);
    } finally {
      apps.push(again); // closed after the browser (its keep-alive connections would hold the close)
    }
    expect(cspErrors).toEqual([]);
  });
});
