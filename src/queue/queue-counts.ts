import type { ValkeyClient } from '../core/connection/index.js';
import { fromReplyError } from '../core/reply-errors.js';
import { queueKeys } from '../core/keys.js';
import type { JobCounts, JobStatus } from './job.js';

/** The priority levels whose pending lists a count reads (`pendingAt(0)` is `pending`). */
const LEVELS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
const STATUSES: readonly JobStatus[] = ['scheduled', 'pending', 'active', 'done', 'dead', 'cancelled', 'waiting'];

/** Jobs per status of `queue`, read in one round trip (plus one for its fair lanes, if any). */
export async function readCounts(c: ValkeyClient, queue: string): Promise<JobCounts> {
  const k = queueKeys(queue);
  const [[ghosts, waits], ...n] = await Promise.all([
    c.hmget(k.meta, 'ghosts', 'waits'),
    c.zcard(k.scheduled),
    Promise.all(LEVELS.map((p) => c.llen(k.pendingAt(p)))).then((ls) => ls.reduce((a, b) => a + b, 0)),
    c.zcount(k.active, '-inf', '(+inf'), // not the anchor (score +inf, docs/protocol.md §2)
    c.zcard(k.done),
    c.zcard(k.dead),
    c.zcard(k.cancelled),
    0, // waiting: meta `waits` (docs/protocol.md §2), filled in below
  ]).catch((err: unknown) => {
    throw fromReplyError(err);
  });
  // Ghosts: ids of jobs cancelled while pending, still in the list until a claim drops them.
  n[1] = Math.max(0, n[1] - (Number(ghosts) || 0)) + (await lanePending(c, queue));
  n[6] = Math.max(0, Number(waits) || 0);
  return Object.fromEntries(STATUSES.map((s, i) => [s, n[i]])) as JobCounts;
}

/** Jobs pending in fair lanes: the lists of the lanes in the ring (docs/protocol.md §5, Fair lanes). */
async function lanePending(c: ValkeyClient, queue: string): Promise<number> {
  const k = queueKeys(queue);
  try {
    const ring = new Set(await c.lrange(k.laneRing, 0, -1));
    ring.delete('');
    const lens = await Promise.all([...ring].map((lane) => c.llen(k.lane(lane))));
    return lens.reduce((a, b) => a + b, 0);
  } catch (err) {
    throw fromReplyError(err);
  }
}
