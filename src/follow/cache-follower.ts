import { GroupConsumer } from '../bus/consumer-group/index.js';
import { resolveGroupOptions, type BusEvent, type GroupStart } from '../bus/consumer-group/index.js';
import type { EchoMqConnection } from '../core/connection/index.js';
import { InvalidOptionError } from '../core/errors.js';
import { keySet, refuseUnknownKeys } from '../core/known-keys.js';
import { assertName } from '../core/keys.js';
import type { ConsumerLogger } from '../core/logger.js';
import type { CacheApi } from '../cache/cache-types.js';
import { checkTags } from '../cache/cache-options.js';

/**
 * Makes a cache namespace follow a Bus topic: each event of `topic` invalidates the keys and the
 * tags its functions name, in `namespace`, once per event per namespace — one consumer group
 * (`cache.<namespace>` unless `group` is given) shared by every instance, acknowledged only after
 * the invalidation succeeded (a crash leaves the event pending; it is reclaimed and replayed).
 * Annotate the event's payload type on the functions: `tags: (e: BusEvent<{ id: string }>) => …`.
 */
export interface CacheInvalidationRule {
  /** The topic to follow (key grammar). */
  readonly topic: string;
  /** The namespace whose copies the events invalidate. Default: the cache's default namespace. */
  readonly namespace?: string;
  /** The tags an event invalidates (legal tags; anything else fails the event, which is retried, then dead-lettered). */
  tags?(event: BusEvent<never>): readonly string[];
  /** The keys an event invalidates (legal cache keys). */
  keys?(event: BusEvent<never>): readonly string[];
  /** The consumer group (key grammar). Default `cache.<namespace>`. */
  readonly group?: string;
  /** Where the group starts when it is first created. Default `'now'`: earlier events are not replayed. */
  readonly from?: GroupStart;
  /** Deliveries of one event before it is dead-lettered (1..1000). Default 5. */
  readonly maxDeliveries?: number;
  /** An event pending this long (ms, 100..86,400,000) on a member that died is reclaimed by another. Default 30,000. */
  readonly ackTimeoutMs?: number;
}

/** A rule with its namespace and group resolved. */
export interface ResolvedInvalidationRule extends CacheInvalidationRule {
  readonly namespace: string;
  readonly group: string;
}

const RULE_KEYS = keySet<CacheInvalidationRule>({
  topic: true, namespace: true, tags: true, keys: true, group: true, from: true, maxDeliveries: true, ackTimeoutMs: true,
});

/**
 * Validates `cache.invalidateOn` before any I/O (unknown keys, names, group options; a rule needs
 * `tags` or `keys`; two rules may not share a topic and a group). Throws `InvalidOptionError` or
 * `InvalidNameError`.
 */
export function resolveInvalidationRules(rules: unknown, defaultNs: string): ResolvedInvalidationRule[] {
  if (rules === undefined) return [];
  if (!Array.isArray(rules)) throw new InvalidOptionError('cache.invalidateOn must be an array of { topic, tags?, keys?, namespace? }');
  const seen = new Set<string>();
  return (rules as CacheInvalidationRule[]).map((r, i) => {
    refuseUnknownKeys(r, RULE_KEYS, 'cache options', { path: `invalidateOn[${i}]` });
    assertName(r.topic, 'topic');
    const namespace = r.namespace ?? defaultNs;
    assertName(namespace, 'cache namespace');
    for (const f of ['tags', 'keys'] as const) {
      if (r[f] !== undefined && typeof r[f] !== 'function') throw new InvalidOptionError(`cache.invalidateOn ${f} must be a function of the event`);
    }
    if (!r.tags && !r.keys) throw new InvalidOptionError(`cache.invalidateOn rule of topic "${r.topic}" needs tags or keys`);
    const group = r.group ?? `cache.${namespace}`;
    resolveGroupOptions({ group, from: r.from, maxDeliveries: r.maxDeliveries, ackTimeoutMs: r.ackTimeoutMs });
    const slot = `${r.topic}\u0000${group}`;
    if (seen.has(slot)) throw new InvalidOptionError(`two cache.invalidateOn rules follow topic "${r.topic}" in group "${group}": merge them`);
    seen.add(slot);
    return { ...r, namespace, group };
  });
}

/** What a follower needs besides the connection and the rules. */
export interface CacheFollowConfig {
  /** Stable instance part of the consumer names (see `consumerName`). */
  readonly instance?: string;
  /** Dead-letter log cap of the groups. */
  readonly deadCap?: number;
  readonly logger?: ConsumerLogger;
}

/** The invalidation one event asks for, checked before any of it runs. */
function plan(rule: ResolvedInvalidationRule, event: BusEvent<never>): { keys: readonly string[]; tags: readonly string[] } {
  const keys = rule.keys ? checkTags(rule.keys(event), 'keys') : [];
  const tags = rule.tags ? checkTags(rule.tags(event)) : [];
  return { keys, tags };
}

/**
 * Runs the consumer groups of `cache.invalidateOn` (usable without Nest): one `GroupConsumer`
 * per rule, whose handler invalidates what the event names through `cache`, so every instance's
 * L1 drops it through coherence.
 */
export class CacheFollower {
  private readonly groups: GroupConsumer[] = [];
  /** Removes the follower from the process description (`connection.process`) while it runs. */
  private undescribe?: () => void;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly cache: CacheApi,
    readonly rules: readonly ResolvedInvalidationRule[],
    private readonly config: CacheFollowConfig = {},
  ) {}

  /** The running group loops. */
  get consumers(): readonly GroupConsumer[] {
    return this.groups;
  }

  /** Creates the groups (idempotently) and starts reading. */
  async start(): Promise<void> {
    this.undescribe ??= this.conn.process.add(() => ({ kind: 'role', role: 'cache-follower' }));
    for (const rule of this.rules) {
      const g = new GroupConsumer(this.conn, {
        topic: rule.topic,
        options: { group: rule.group, from: rule.from ?? 'now', maxDeliveries: rule.maxDeliveries, ackTimeoutMs: rule.ackTimeoutMs },
        handler: (event) => this.apply(rule, event as BusEvent<never>),
        instance: this.config.instance,
        deadCap: this.config.deadCap,
        logger: this.config.logger,
      });
      await g.start();
      this.groups.push(g);
    }
  }

  /** Stops the loops (running invalidations get `deadlineMs`; unacknowledged events are replayed later). */
  async stop(deadlineMs: number): Promise<void> {
    this.undescribe?.();
    this.undescribe = undefined;
    await Promise.all(this.groups.map((g) => g.stop(deadlineMs)));
    this.groups.length = 0;
  }

  private async apply(rule: ResolvedInvalidationRule, event: BusEvent<never>): Promise<void> {
    const { keys, tags } = plan(rule, event);
    const ns = { namespace: rule.namespace };
    for (const key of keys) await this.cache.invalidate(key, ns);
    for (const tag of tags) await this.cache.invalidateTag(tag, ns);
  }
}
