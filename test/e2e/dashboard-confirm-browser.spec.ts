import 'reflect-metadata';
import { jest } from '@jest/globals';
import { existsSync } from 'node:fs';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { buryJobs, startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue } from '../helpers/valkey.js';

// Issue 38: the confirmation step of destructive buttons, clicked in a real browser (its Origin
// and Sec-Fetch-Site headers, the CSP's form-action), and Cancel.
jest.setTimeout(120_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const f = queueFixture();

let d: DashboardTestApp;
let browser: Browser;
let page: Page;
const cspErrors: string[] = [];
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/ensure-chromium.sh (as root) first`);
  d = await startDashboardApp({ path: '/echomq', refreshMs: 0 });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  page = await browser.newPage();
  await page.setExtraHTTPHeaders({ 'x-let-in': 'yes' });
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspErrors.push(m.text());
  });
});
afterAll(async () => {
  await browser?.close();
  await d?.app.close();
});

/** Clicks the button of the form posting to `action` and waits for the next page. */
async function submit(action: string): Promise<void> {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(`form[action="${action}"] button`)]);
}

describe('destructive buttons in headless Chromium', () => {
  it('Cancel… leads to a confirmation page; confirming cancels the job', async () => {
    const q = randomQueue('b-cancel');
    const id = await f.queues.enqueue(q, { n: 1 });
    const path = `/echomq/queues/${q}/jobs/${id}`;
    await page.goto(`${d.origin}${path}`, { waitUntil: 'load' });
    await submit(`${path}/cancel`);
    expect(await page.$eval('#confirm-question', (el) => el.textContent)).toContain(`Cancel job ${id} (pending)`);
    expect((await f.queues.getJob(q, id))?.status).toBe('pending');
    await submit(`${path}/cancel`);
    expect(await page.$eval('#notice', (el) => el.textContent)).toContain('Cancelled');
    expect((await f.queues.getJob(q, id))?.status).toBe('cancelled');
    expect(cspErrors).toEqual([]);
  });

  it('Retry all dead (n)… asks with the count, then retries them', async () => {
    const q = randomQueue('b-retry');
    await buryJobs(f.conn, f.queues, q, [{ a: 1 }, { b: 2 }]);
    await page.goto(`${d.origin}/echomq/queues/${q}?status=dead`, { waitUntil: 'load' });
    const action = `/echomq/queues/${q}/retry-dead`;
    expect(await page.$eval(`form[action="${action}"] button`, (el) => el.textContent)).toBe('Retry all dead (2)…');
    await submit(action);
    expect(await page.$eval('#confirm-question', (el) => el.textContent)).toContain(`Retry 2 dead job(s) of ${q}?`);
    await submit(action);
    expect(await page.$eval('#notice', (el) => el.textContent)).toContain('Retried the dead jobs');
    expect((await f.queues.counts(q)).dead).toBe(0);
    expect(cspErrors).toEqual([]);
  });
});
