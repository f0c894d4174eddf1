import 'reflect-metadata';
import { jest } from '@jest/globals';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { queueKeys, topicKeys, wire } from '../../src/protocol.js';
import { startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { deadLetters } from '../helpers/dead-letters.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue, rawClient } from '../helpers/valkey.js';

// Issue 38 in a real browser: the queue page's filter form and the Bus dead-letter page with its
// confirmation step. Screenshots go to DASHBOARD_SCREENSHOT_DIR when it is set.
jest.setTimeout(120_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const f = queueFixture();
const raw = rawClient();
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
  await raw.quit();
});

const shoot = async (p: Page, name: string): Promise<void> => {
  const png = await p.screenshot({ fullPage: true });
  if (process.env.DASHBOARD_SCREENSHOT_DIR) writeFileSync(join(process.env.DASHBOARD_SCREENSHOT_DIR, name), png);
};

describe('search and dead letters in headless Chromium', () => {
  it('filters a queue page with the form: error text and a payload field', async () => {
    const q = randomQueue('e2e-search');
    const k = queueKeys(q);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await f.queues.enqueue(q, { user: { id: i % 4 }, order: `A-${100 + i}` }));
    const { jobs } = await wire.claim(f.conn.scriptClient, k, 12, 30_000);
    for (const j of jobs) {
      const i = ids.indexOf(j.id);
      const error = i % 2 ? `Error: upstream timeout after ${i} s` : 'ValidationError: order total is negative';
      await wire.retry(f.conn.scriptClient, k, { id: j.id, token: j.token, error, fatal: true }, { maxAttempts: 1, backoff: 'f:50', deadCap: 1000 });
    }
    await page.goto(`${d.origin}/echomq/queues/${q}?status=dead`, { waitUntil: 'load' });
    expect(await page.$$eval('#jobs tbody tr', (rows) => rows.length)).toBe(12);
    await page.type('#filter input[name="error"]', 'Timeout');
    await page.type('#filter input[name="field"]', 'user.id');
    await page.type('#filter input[name="equals"]', '1');
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#filter button[type="submit"]')]);
    expect(page.url()).toContain('error=Timeout');
    const shown = await page.$$eval('#jobs tbody tr', (rows) => rows.map((r) => r.getAttribute('data-job')));
    expect(shown.sort()).toEqual(ids.filter((_, i) => i % 4 === 1).sort());
    expect(await page.$eval('#examined', (el) => el.textContent)).toContain('Examined 12 of 12 dead entries');
    expect(await page.$eval('#filter input[name="error"]', (el) => (el as HTMLInputElement).value)).toBe('Timeout');
    await shoot(page, 'search.png');
  });

  it('lists a topic dead letters and asks before replaying the ones shown', async () => {
    const topic = randomQueue('e2e-dead');
    const dead = await deadLetters(f.conn, raw, topic, [{ order: 'A-1', total: -5 }, { order: 'A-2', total: 12 }, { order: 'A-3', note: 'x'.repeat(400) }], 'Error: payment gateway refused');
    await page.goto(`${d.origin}/echomq/bus?after=${topic.slice(0, -1)}`, { waitUntil: 'load' });
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(`a[href="/echomq/bus/${topic}/dead-letters"]`)]);
    const rows = await page.$$eval('#dead-letters tbody tr', (trs) => trs.map((r) => r.getAttribute('data-dead')));
    expect(rows).toEqual([...dead].reverse());
    expect(await page.$eval('#dead-letters tbody tr', (r) => r.textContent)).toContain('payment gateway refused');
    await shoot(page, 'bus-dead-letters.png');
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#replay-shown button')]);
    expect(await page.$eval('#confirm-question', (el) => el.textContent)).toContain(`Replay 3 dead letter(s) of topic ${topic}`);
    expect(await raw.xlen(topicKeys(topic).dead)).toBe(3);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#confirm button')]);
    expect(await page.$eval('#notice', (el) => el.textContent)).toContain('Replayed');
    expect(await raw.xlen(topicKeys(topic).dead)).toBe(0);
  });
});
