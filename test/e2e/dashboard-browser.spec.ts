import 'reflect-metadata';
import { jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { Processor, type Job } from '../../src/index.js';
import { buryJobs, startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

// Issue 12: the dashboard in a real browser (Debian's chromium, scripts/ensure-chromium.sh).
jest.setTimeout(120_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const LIVE = randomQueue('live');
const f = queueFixture();

@Injectable()
class Worker {
  @Processor(LIVE, { concurrency: 2 })
  async handle(job: Job<{ n: number }>): Promise<{ n: number }> {
    await new Promise((r) => setTimeout(r, 25));
    return { n: job.payload.n };
  }
}

let d: DashboardTestApp;
let browser: Browser;
let page: Page;
const cspErrors: string[] = [];
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/ensure-chromium.sh (as root) first`);
  d = await startDashboardApp({ path: '/echomq', refreshMs: 300 }, [Worker], true);
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 }); // the docs' screenshots (npm run docs:screenshots)
  await page.setExtraHTTPHeaders({ 'x-let-in': 'yes' });
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspErrors.push(`${m.text()} at ${JSON.stringify(m.location())}`);
  });
});
afterAll(async () => {
  await f.queues?.flows.close();
  await browser?.close();
  await d?.app.close();
});

const count = (p: Page, status: string): Promise<number> => p.$eval(`#counts [data-count="${status}"]`, (el) => Number(el.textContent));

describe('the dashboard in headless Chromium', () => {
  it("shows a queue's counts changing in place as jobs are processed", async () => {
    await eventually(async () => (await fetch(`${d.origin}/echomq/queues/${LIVE}`, { headers: { 'x-let-in': 'yes' } })).status === 200, 10_000, 'the consumer announced its queue');
    await page.goto(`${d.origin}/echomq/queues/${LIVE}?status=done`, { waitUntil: 'load' });
    expect(await count(page, 'done')).toBe(0);
    const before = await page.evaluate(() => performance.timeOrigin);
    for (let n = 0; n < 40; n++) await f.queues.enqueue(LIVE, { n });
    await page.waitForFunction(() => Number(document.querySelector('#counts [data-count="done"]')?.textContent) === 40, { timeout: 60_000 });
    expect(await count(page, 'pending')).toBe(0);
    expect(await page.evaluate(() => performance.timeOrigin)).toBe(before); // refreshed in place, not reloaded
    // The stored history: the consumer flushes every 5 s, the dashboard reuses a read for 5 s.
    await page.waitForFunction(() => (document.querySelector('#throughput-chart figcaption')?.textContent ?? '').includes('40 completed'), { timeout: 30_000 });
    expect(cspErrors).toEqual([]);
  });

  it('retries a dead job with a click (the job leaves dead) and shows a <script> payload as text', async () => {
    const q = randomQueue('dead');
    const evil = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">';
    const [id] = await buryJobs(f.conn, f.queues, q, [{ note: evil }]);
    await page.goto(`${d.origin}/echomq/queues/${q}?status=dead`, { waitUntil: 'load' });
    expect(await count(page, 'dead')).toBe(1);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(`tr[data-job="${id}"] button`)]);
    expect(await page.$eval('#notice', (el) => el.textContent)).toContain('Retried');
    expect((await f.queues.getJob(q, id))?.status).not.toBe('dead');
    await page.goto(`${d.origin}/echomq/queues/${q}?status=dead`, { waitUntil: 'load' });
    expect(await count(page, 'dead')).toBe(0);

    await page.goto(`${d.origin}/echomq/queues/${q}/jobs/${id}`, { waitUntil: 'load' });
    const shown = await page.$eval('[data-field="payload"]', (el) => el.textContent ?? '');
    expect(shown).toContain('<script>window.__pwned = 1</script>');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.$$('main script, main img')).toHaveLength(0);
    expect(cspErrors).toEqual([]);
  });

  it('takes a non-empty screenshot of the overview', async () => {
    await page.goto(`${d.origin}/echomq?after=${LIVE.slice(0, -1)}`, { waitUntil: 'load' }); // the registry page holding LIVE
    expect(await page.$(`tr[data-queue="${LIVE}"]`)).not.toBeNull();
    const png = Buffer.from(await page.screenshot({ type: 'png', fullPage: true }));
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect(png.length).toBeGreaterThan(10_000);
    if (process.env.DASHBOARD_SCREENSHOT) writeFileSync(process.env.DASHBOARD_SCREENSHOT, png); // to look at it
  });

  it("takes a screenshot of a waiting parent's page showing its children (issue 38)", async () => {
    const [q, kids] = [randomQueue('parent'), randomQueue('children')];
    const flow = await f.queues.flow({ queue: q, payload: { order: 7 }, children: [{ queue: kids, payload: 1, key: 'charge' }, { queue: kids, payload: 2, key: 'ship' }] });
    await page.goto(`${d.origin}/echomq/queues/${q}/jobs/${flow.id}`, { waitUntil: 'load' });
    expect(await page.$$eval('#children tr[data-child]', (rows) => rows.map((r) => r.getAttribute('data-child')))).toEqual(flow.children.map((c) => c.id));
    expect(await page.$eval('main', (el) => el.textContent ?? '')).not.toContain('Remove');
    const png = Buffer.from(await page.screenshot({ type: 'png', fullPage: true }));
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect(png.length).toBeGreaterThan(10_000);
    if (process.env.DASHBOARD_PARENT_SCREENSHOT) writeFileSync(process.env.DASHBOARD_PARENT_SCREENSHOT, png); // to look at it
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(`tr[data-child="${flow.children[0].id}"] a`)]);
    expect(await page.$eval('#parent', (el) => el.textContent)).toBe(flow.id);
    expect(cspErrors).toEqual([]);
  });

  it('lists the processes with their queues, concurrency and heartbeat, linked from the header (issue 38)', async () => {
    await page.goto(`${d.origin}/echomq/`, { waitUntil: 'load' });
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('header a[href$="/processes"]')]);
    // The app's own process (this one) runs the LIVE consumer (concurrency 2): its row is live.
    const row = `#processes tr[data-state="live"][data-pid="${process.pid}"]`;
    await page.waitForFunction((sel: string, q: string) => [...document.querySelectorAll(sel)].some((r) => r.textContent?.includes(q)), { timeout: 20_000 }, row, LIVE);
    const cells = await page.$$eval(row, (rows, q) => rows.filter((r) => r.textContent?.includes(q as string)).map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')), LIVE);
    expect(cells).toHaveLength(1);
    const [node, state, host, pid, runtime, started, heartbeat, queues] = cells[0];
    expect([Number.isInteger(Number(node)), state, host.length > 0, pid, runtime]).toEqual([true, expect.stringContaining('live'), true, String(process.pid), `node ${process.versions.node} / 0.1.0`]);
    expect(started).toMatch(/ago|just now/);
    expect(heartbeat).toMatch(/ago|just now/);
    expect(queues).toContain(`${LIVE} `);
    expect(queues).toMatch(/\d+\/2/);
    expect(await page.$eval(`${row} td time`, (el) => el.getAttribute('title'))).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    const png = Buffer.from(await page.screenshot({ type: 'png', fullPage: true }));
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    if (process.env.DASHBOARD_SCREENSHOT_DIR) writeFileSync(join(process.env.DASHBOARD_SCREENSHOT_DIR, 'processes.png'), png);
    expect(cspErrors).toEqual([]);
  });
});
