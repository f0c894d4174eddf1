import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { QueueAdmin } from '../admin/queue-admin.js';
import { LISTABLE, type JobCursor, type ListableStatus } from '../admin/job-cursor.js';
import type { BusAdmin } from '../admin/bus-admin.js';
import type { CacheAdmin } from '../admin/cache-admin.js';
import { busSection, cacheSection } from './bus-cache-sections.js';
import { EchoMqError, InvalidOptionError } from '../core/errors.js';
import { describeError } from '../core/reply-errors.js';
import { assertJobIdOrRef } from '../queue/business-ids.js';
import { echoMqErrorReply } from '../nest/exception-filter.js';
import { errorPage, page, seg, type PageContext } from './dashboard-layout.js';
import { html, type SafeHtml } from './html.js';
import { checkCsrf, checkHost, HttpRefusal, securityHeaders, type HostPolicy } from './dashboard-security.js';
import { jobPage, unreadableJobPage } from './job-page.js';
import { confirmPage } from './confirm-page.js';
import { readOutcome } from './entry-rows.js';
import { overviewPage } from './overview-page.js';
import { queueData, queuePage } from './queue-page.js';
import { processesPage } from './processes-page.js';
import { filterQuery, searchOptionsOf } from './job-filter-form.js';
import { deadLetterRoute, deadLettersGet, deadLettersPost } from './dead-letters-page.js';
import type { JobPage } from '../admin/job-pages.js';
import type { JobSearchCursor, JobSearchPage } from '../admin/job-search.js';
import { chartRange, MetricsHistory, overviewHistory } from './metrics-history.js';
import { chartRegion } from './chart.js';

/** A request as the dashboard sees it (adapted from Express or `node:http`). */
export interface DashboardRequest {
  /** `GET`, `POST`, … */
  readonly method: string;
  /** The path below the mount, starting with `/` (percent-encoded as received). */
  readonly path: string;
  /** The query string's parameters. */
  readonly query: URLSearchParams;
  /** The urlencoded form of a POST (empty otherwise). */
  readonly form: Readonly<Record<string, unknown>>;
  /** The request headers, lower-case names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The mount's path as the browser sees it, without a trailing slash. */
  readonly base: string;
}

/** A reply: status, headers and an HTML body. */
export interface DashboardResponse {
  /** The HTTP status. */
  readonly status: number;
  /** Response headers (the security headers included). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body (HTML), empty for a redirect. */
  readonly body: string;
}

/** Where the dashboard reads from. */
export interface DashboardSources {
  /** The queue operator surface. */
  readonly queues: QueueAdmin;
  /** The Bus operator surface (topics, groups and their lag). */
  readonly bus?: BusAdmin;
  /** The Cache operator surface (namespaces and, mounted in an app, its counters). */
  readonly caches?: CacheAdmin;
  /** Show the cache counters of this process (true when mounted in the app that uses the cache). */
  readonly processCache?: boolean;
  /** False: no charts (default: the history consumers store in Valkey, read through `queues`). */
  readonly charts?: boolean;
}

/** How the dashboard behaves. */
export interface DashboardBehaviour {
  /** No mutations: no buttons, and every POST is refused (403). */
  readonly readOnly: boolean;
  /** Live refresh period of counts and charts, ms (0 = off). */
  readonly refreshMs: number;
  /** The `Host` values answered (others get 421); undefined: no Host check. */
  readonly allowedHosts?: readonly string[];
  /** The origins a POST may come from; undefined: those of `allowedHosts`. */
  readonly allowedOrigins?: readonly string[];
}

/** The fixed notices a redirect after a POST may show (`?notice=`): never text from the request. */
const NOTICES: Readonly<Record<string, string>> = {
  paused: 'Paused: consumers claim nothing more from this queue.',
  resumed: 'Resumed.',
  'was-paused': 'The queue was already paused.',
  'was-running': 'The queue was already running.',
  retried: 'Retried: the job is due again, with fresh attempts.',
  'not-dead': 'Not retried: the job is not dead.',
  promoted: 'The job is due now.',
  'not-scheduled': 'Not promoted: the job is not scheduled.',
  removed: 'Removed.',
  'not-removed': 'Not removed: the job is running, a waiting parent or an unfinished flow child.',
  'retried-dead': 'Retried the dead jobs (up to 1,000 per click).',
  cancelled: 'Cancelled: the job will not run.',
  'cancel-requested': 'Cancel requested: the running job stops when its handler next checks job.signal.',
  'not-cancelled': 'Not cancelled: the job had already finished.',
  'lane-paused': 'Lane paused: consumers claim nothing more from it.',
  'lane-was-paused': 'The lane was already paused.',
  'lane-resumed': 'Lane resumed.',
  'lane-was-running': 'The lane was not paused.',
  'dead-replayed': 'Replayed: published to the topic again as new events (every group of the topic receives them); the dead letters are deleted.',
  'dead-purged': 'Purged: the dead letters are deleted.',
  'dead-gone': 'Nothing done: those dead letters are gone (replayed or purged already).',
};

/** The notice of each cancel outcome. */
const CANCELLED: Readonly<Record<'cancelled' | 'flagged' | 'finished', string>> = { cancelled: 'cancelled', flagged: 'cancel-requested', finished: 'not-cancelled' };

/**
 * The dashboard itself, independent of the HTTP server: routes, renders, checks POSTs (CSRF
 * token and `Sec-Fetch-Site`/`Origin`), and answers every error with an error page of the right
 * status (bad input 400, unknown queue or job 404, never a 500 for bad input). Every response
 * carries a nonce-based Content-Security-Policy (docs/dashboard.md).
 */
export class DashboardApp {
  /** The per-process CSRF token every form carries and every POST must return. */
  readonly csrf = randomBytes(24).toString('base64url');

  private readonly sections: readonly ('bus' | 'cache')[];
  /** The stored history behind the charts (reads reused for 5 s), unless the charts are off. */
  private readonly history?: MetricsHistory;

  constructor(
    private readonly src: DashboardSources,
    private readonly behaviour: DashboardBehaviour,
  ) {
    this.sections = [...(src.bus ? (['bus'] as const) : []), ...(src.caches ? (['cache'] as const) : [])];
    this.history = src.charts === false ? undefined : new MetricsHistory(src.queues);
  }

  /** The Host and Origin allow-lists, read per request (the standalone server learns its port after listening). */
  private get hosts(): HostPolicy {
    return { hosts: this.behaviour.allowedHosts, origins: this.behaviour.allowedOrigins };
  }

  /** Answers one request. */
  async handle(req: DashboardRequest): Promise<DashboardResponse> {
    const ctx: PageContext = { base: req.base, nonce: randomBytes(16).toString('base64'), csrf: this.csrf, readOnly: this.behaviour.readOnly, refreshMs: this.behaviour.refreshMs, sections: this.sections };
    try {
      checkHost(req.headers, this.hosts); // before anything is read or rendered: a rebound name gets nothing
      const parts = req.path.split('/').filter(Boolean).map(decodeSegment);
      if (req.method === 'POST') return await this.post(ctx, req, parts);
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpRefusal(405, 'the dashboard answers GET and POST only');
      const live = req.headers['x-echomq-live'] === '1'; // the refresh script: the content only, no shell
      return this.ok(ctx, await this.get(ctx, req, parts), live);
    } catch (err) {
      return this.failure(ctx, err);
    }
  }

  private async get(ctx: PageContext, req: DashboardRequest, parts: string[]): Promise<{ title: string; body: SafeHtml }> {
    const notice = NOTICES[req.query.get('notice') ?? ''];
    const shown = notice ? html`<p class="notice" id="notice">${notice}</p>` : undefined;
    const { queues } = this.src;
    if (parts.length === 0) {
      const after = req.query.get('after') ?? undefined;
      const page = await queues.list({ after, limit: 100 });
      const history = this.history && (await overviewHistory(this.history, chartRange(req.query), page.items.map((q) => q.name)));
      return { title: 'Queues', body: overviewPage(ctx, { queues: page, after, history }) };
    }
    if (parts.length === 1 && parts[0] === 'processes') return { title: 'Processes', body: processesPage(ctx, await queues.processes()) };
    if (parts.length === 1 && (parts[0] === 'bus' || parts[0] === 'cache')) return this.section(ctx, parts[0], req.query.get('after') ?? undefined);
    const dead = this.src.bus ? deadLetterRoute(parts) : undefined;
    if (dead && this.src.bus) return deadLettersGet(ctx, this.src.bus, dead, req.query, shown);
    if (parts[0] !== 'queues') throw new HttpRefusal(404, 'no such page');
    const [, queue, sub, id] = parts;
    if (parts.length === 2) {
      const status = (req.query.get('status') ?? 'pending') as ListableStatus;
      if (!LISTABLE.includes(status)) throw new InvalidOptionError(`status must be one of ${LISTABLE.join(', ')}`);
      const cursor = (req.query.get('cursor') ?? undefined) as JobCursor | undefined;
      const filter = filterQuery(req.query); // any filter: a bounded filtered listing (job-filter-form.ts)
      const list = filter ? queues.findJobs(queue, { ...searchOptionsOf(filter), status, cursor: (req.query.get('cursor') as JobSearchCursor | null) ?? undefined, limit: 50 }) : queues.jobs(queue, { status, cursor, limit: 50 });
      // Counts and jobs each on their own: what cannot be read is shown as such (entry-rows.ts).
      const [info, jobs] = await Promise.all([readOutcome(queues.info(queue)), readOutcome<JobPage | JobSearchPage>(list)]);
      const range = this.history && chartRange(req.query);
      const charts = this.history && range && chartRegion({ href: `${ctx.base}/queues/${seg(queue)}`, keep: `status=${status}&` }, range, await this.history.read(queue, range), true);
      return { title: queue, body: queuePage(ctx, { ...queueData(queue, info, jobs), status, paged: cursor !== undefined, charts, filter }, shown) };
    }
    if (parts.length === 3 && sub === 'search') {
      const wanted = (req.query.get('id') ?? '').trim();
      assertJobIdOrRef(wanted); // a wire id or a business id: the page is the wire id's
      const found = await readOutcome(queues.job(queue, wanted)); // unknown: 404; unreadable: its page says why
      throw new Redirect(`/queues/${seg(queue)}/jobs/${seg(found.ok ? found.value.id : wanted)}`);
    }
    if (parts.length === 4 && sub === 'jobs') {
      assertJobIdOrRef(id);
      const job = await readOutcome(queues.job(queue, id));
      return { title: `Job ${id}`, body: job.ok ? jobPage(ctx, job.value, shown) : unreadableJobPage(ctx, queue, id, job.error) };
    }
    throw new HttpRefusal(404, 'no such page');
  }

  /** The Bus page (topics with their groups, 50 per page) or the Cache page (namespaces, 100 per page). */
  private async section(ctx: PageContext, which: string, after: string | undefined): Promise<{ title: string; body: SafeHtml }> {
    const { bus, caches } = this.src;
    if (which === 'bus' && bus) {
      const topics = await bus.topics({ after, limit: 50 });
      const rows = await Promise.all(topics.items.map((topic) => (topic.error ? { topic, groups: [] } : bus.groups(topic.name).then((groups) => ({ topic, groups }), (err: unknown) => ({ topic: { ...topic, error: describeError(err) }, groups: [] })))));
      return { title: 'Bus', body: busSection(ctx, rows, topics.next) };
    }
    if (which === 'cache' && caches) {
      const stats = await caches.stats({ after, limit: 100 });
      return { title: 'Cache', body: cacheSection(ctx, stats, this.src.processCache ? stats.process : undefined) };
    }
    throw new HttpRefusal(404, 'no such page');
  }

  private async post(ctx: PageContext, req: DashboardRequest, parts: string[]): Promise<DashboardResponse> {
    if (this.behaviour.readOnly) throw new HttpRefusal(403, 'this dashboard is read-only');
    checkCsrf(req.headers, req.form._csrf, this.csrf, this.hosts);
    const [root, queue, a, id, verb] = parts;
    const ask = (path: string, question: string, button: string, to: string, fields?: Record<string, string>): DashboardResponse => this.ok(ctx, { title: 'Confirm', body: confirmPage(ctx, path, question, button, to, fields) }, false);
    const dead = root === 'bus' && this.src.bus ? await deadLettersPost(this.src.bus, parts, req.form) : undefined;
    if (dead) return 'ask' in dead ? ask(dead.ask.path, dead.ask.question, dead.ask.button, dead.ask.back, dead.ask.fields) : this.redirect(ctx, dead.to, dead.notice);
    if (root !== 'queues' || queue === undefined) throw new HttpRefusal(404, 'no such action');
    const q = this.src.queues;
    const back = `/queues/${seg(queue)}`;
    const confirmed = req.form.confirm === 'yes'; // destructive actions: a first POST only asks (confirm-page.ts)
    if (parts.length === 3) {
      if (a === 'pause') return this.redirect(ctx, back, (await q.pause(queue)) ? 'paused' : 'was-paused');
      if (a === 'resume') return this.redirect(ctx, back, (await q.resume(queue)) ? 'resumed' : 'was-running');
      if (a === 'retry-dead' && !confirmed) {
        const dead = (await q.info(queue)).counts.dead;
        return ask(`${back}/retry-dead`, `Retry ${dead} dead job(s) of ${queue}${dead > 1000 ? ' (1,000 per click)' : ''}? Each runs again with fresh attempts.`, `Retry ${Math.min(dead, 1000)} dead job(s)`, `${back}?status=dead`);
      }
      if (a === 'retry-dead') return (await q.retryDead(queue)), this.redirect(ctx, `${back}?status=dead`, 'retried-dead');
    }
    if (parts.length === 4 && a === 'lanes' && id === 'pause') return this.redirect(ctx, back, (await q.pauseLane(queue, String(req.form.lane ?? ''))) ? 'lane-paused' : 'lane-was-paused');
    if (parts.length === 5 && a === 'lanes' && verb === 'resume') return this.redirect(ctx, back, (await q.resumeLane(queue, id)) ? 'lane-resumed' : 'lane-was-running');
    if (parts.length === 5 && a === 'jobs') {
      const job = `${back}/jobs/${seg(id)}`;
      if (verb === 'retry') return this.redirect(ctx, job, (await q.retry(queue, id)) ? 'retried' : 'not-dead');
      if (verb === 'promote') return this.redirect(ctx, job, (await q.promote(queue, id)) ? 'promoted' : 'not-scheduled');
      if ((verb === 'remove' || verb === 'cancel') && !confirmed) {
        const { status } = await q.job(queue, id);
        if (verb === 'remove') return ask(`${job}/remove`, `Remove job ${id} (${status}) of ${queue} with its row, payload and options? This cannot be undone.`, 'Remove 1 job', job);
        const running = status === 'active';
        return ask(`${job}/cancel`, running ? `Ask running job ${id} of ${queue} to stop? Its handler sees job.signal abort and stops at its next check (cooperative cancel).` : `Cancel job ${id} (${status}) of ${queue}? It will not run.`, running ? 'Request cancel of 1 job' : 'Cancel 1 job', job);
      }
      if (verb === 'remove') return (await q.remove(queue, id)) ? this.redirect(ctx, back, 'removed') : this.redirect(ctx, job, 'not-removed');
      if (verb === 'cancel') return this.redirect(ctx, job, CANCELLED[await q.cancel(queue, id)]);
    }
    throw new HttpRefusal(404, 'no such action');
  }

  private ok(ctx: PageContext, p: { title: string; body: SafeHtml }, live: boolean): DashboardResponse {
    return { status: 200, headers: securityHeaders(ctx.nonce), body: live ? p.body.text : page(ctx, p.title, p.body) };
  }

  private redirect(ctx: PageContext, to: string, notice?: string): DashboardResponse {
    const sep = to.includes('?') ? '&' : '?';
    return { status: 303, headers: { ...securityHeaders(ctx.nonce), Location: `${ctx.base}${to}${notice ? `${sep}notice=${notice}` : ''}` }, body: '' };
  }

  private failure(ctx: PageContext, err: unknown): DashboardResponse {
    if (err instanceof Redirect) return this.redirect(ctx, err.to);
    let status = 500;
    let message = 'internal error';
    let extra: Record<string, string> = {};
    if (err instanceof HttpRefusal) [status, message] = [err.status, err.message];
    else if (err instanceof EchoMqError) {
      const reply = echoMqErrorReply(err);
      [status, message, extra] = [reply.status, `${err.code}: ${reply.body.message}`, { ...reply.headers }];
    }
    const headers = { ...securityHeaders(ctx.nonce), ...extra };
    return { status, headers, body: errorPage(ctx, status, STATUS_CODES[status] ?? 'Error', message) };
  }
}

/** A GET that answers with a redirect (the search by id). */
class Redirect extends Error {
  constructor(readonly to: string) {
    super('redirect');
  }
}

/** Decodes a path segment; a malformed escape is bad input (400). */
function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new HttpRefusal(400, 'malformed percent-encoding in the path');
  }
}
