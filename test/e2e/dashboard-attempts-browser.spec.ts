import 'reflect-metadata';
import { jest } from '@jest/globals';
import { existsSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { queueKeys } from '../../src/protocol.js';
import { wire } from '../../src/core/wire/index.js';
import { startConsumer } from '../helpers/consumers.js';
import { startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

// Issue 38: a job's attempt history on its dashboard page, in a real browser.
jest.setTimeout(120_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const f = queueFixture();

let d: DashboardTestApp;
let browser: Browser;
let page: Page;
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/ensure-chromium.sh (as root) first`);
  d = await startDashboardApp({ path: '/echomq' });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  await page.setExtraHTTPHeaders({ 'x-let-in': 'yes' });
});
afterAll(async () => {
  await browser?.close();
  await d?.app.close();
});

/** Fails its first run (a thrown TypeError: its name is in the stack), then returns. */
async function settleInvoice(attempt: number): Promise<string> {
  await new Promise((r) => setTimeout(r, 30));
  if (attempt === 2) throw new TypeError('payment gateway timed out <b>502</b>');
  return 'settled';
}

describe('the job page in headless Chromium', () => {
  it('lists every attempt: start, duration, worker, outcome, error, the stack folded', async () => {
    const q = randomQueue('attempts');
    const id = await f.queues.enqueue(q, { invoice: 42 });
    // Attempt 1: its lease expires (a consumer that died), the reaper takes it back.
    const k = queueKeys(q);
    expect((await wire.claim(f.conn.scriptClient, k, 1, 20)).jobs).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 40));
    expect((await wire.reap(f.conn.scriptClient, k, 10, 3, 1000)).requeued).toBe(1);
    // Attempt 2 throws, attempt 3 completes.
    const { consumer } = await startConsumer(f.conn, q, (j) => settleInvoice(j.attempt), { attempts: 5, backoff: 'f:20' });
    f.consumers.push(consumer);
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'done', 10_000, 'the job done');

    await page.goto(`${d.origin}/echomq/queues/${q}/jobs/${id}`, { waitUntil: 'load' });
    const rows = await page.$$eval('#attempts tr[data-attempt]', (trs) =>
      trs.map((tr) => {
        const td = [...tr.querySelectorAll(':scope > td')];
        return {
          n: td[0].textContent,
          started: td[1].querySelector('time')?.getAttribute('title') ?? td[1].textContent,
          duration: td[2].textContent,
          worker: td[3].textContent,
          outcome: td[4].querySelector('[data-state]')?.getAttribute('data-state'),
          error: td[5].firstChild?.textContent ?? '',
          hasStack: td[5].querySelector('details') !== null,
        };
      }),
    );
    expect(rows.map((r) => [r.n, r.outcome, r.hasStack])).toEqual([['1', 'lease-expired', false], ['2', 'failed', true], ['3', 'done', false]]);
    for (const r of rows) {
      expect(r.started).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(r.duration).toMatch(/^\d+(\.\d)? (ms|s)$/);
    }
    expect(rows.map((r) => r.worker)).toEqual(['', `${hostname()}:${process.pid}`, '']);
    expect(rows[0].error).toBe('lease expired');
    expect(rows[1].error).toBe('TypeError: payment gateway timed out <b>502</b>'); // markup shown as text
    expect(await page.$$('#attempts b')).toHaveLength(0);

    // The stack is folded until its summary is clicked.
    const pre = '#attempts tr[data-attempt="2"] details pre';
    const shown = (): Promise<[boolean | undefined, boolean]> =>
      page.$eval(pre, (el): [boolean | undefined, boolean] => [el.closest('details')?.open, (el as unknown as { checkVisibility(): boolean }).checkVisibility()]);
    expect(await shown()).toEqual([false, false]);
    await page.click('#attempts tr[data-attempt="2"] details summary');
    expect(await shown()).toEqual([true, true]);
    expect(await page.$eval(pre, (el) => el.textContent ?? '')).toContain('settleInvoice');
    // The job's own start and run time.
    expect(await page.$eval('[data-field="started"] time', (el) => el.getAttribute('title'))).toMatch(/^\d{4}-/);
    expect(await page.$eval('[data-field="ran"]', (el) => el.textContent ?? '')).toMatch(/^\d+(\.\d)? (ms|s)$/);

    const png = await page.screenshot({ fullPage: true });
    if (process.env.DASHBOARD_SCREENSHOT_DIR) writeFileSync(join(process.env.DASHBOARD_SCREENSHOT_DIR, 'job-attempts.png'), png);
  });
});
