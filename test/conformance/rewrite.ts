/**
 * The rewriter of conformance strings (conformance/README.md "Strings"): key references (`@…`,
 * spelt by the key grammar of docs/protocol.md §2, docs/bus.md, docs/cache.md) and variables
 * (`$name`, `$$`), with branded ids minted from docs/protocol.md §1 alone (no runtime code: the
 * runner is a black box).
 */
import { randomBytes } from 'node:crypto';
import { ScenarioFormatError } from './format.js';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const EPOCH = 1735689600000;

/** The 11-digit base62 body of a snowflake (docs/protocol.md §1). */
export function encodeBody(value: bigint): string {
  let out = '';
  let v = value;
  for (let i = 0; i < 11; i++) {
    out = ALPHABET[Number(v % 62n)] + out;
    v /= 62n;
  }
  return out;
}

/** Mints monotonic ids on node 0 from this process's clock (docs/protocol.md §1, Minting). */
export class IdMinter {
  private lastMs = 0;
  private seq = 0;

  /** The next id of namespace `ns` (`job`, `evt`, `ver`). */
  next(ns: string): string {
    let ms = Date.now();
    if (ms <= this.lastMs) {
      ms = this.lastMs;
      this.seq += 1;
      if (this.seq > 4095) {
        ms += 1;
        this.seq = 0;
      }
    } else {
      this.seq = 0;
    }
    this.lastMs = ms;
    return ns + encodeBody((BigInt(ms - EPOCH) << 22n) | BigInt(this.seq));
  }
}

const minter = new IdMinter();
const TOKEN = /\$(\$|[A-Za-z_][A-Za-z0-9_]*)/g;
const MINTED = /^(job|evt|ver)_[A-Za-z0-9_]+$/;
const QUEUE_KEYS = ['meta', 'pending', 'scheduled', 'active', 'done', 'dead', 'cancelled', 'wake', 'data', 'opts', 'events', 'outbox', 'outdue', 'schedules', 'ticks'];
const BUS_KEYS = ['bus:meta', 'bus:log', 'bus:dead', 'bus:archive', 'bus:signal'];
const CACHE_KEYS = ['cache:log', 'cache:signal'];
/** The cluster-wide keys of the node leases (docs/protocol.md §1). */
export const NODE_KEYS: Record<string, string> = { 'node-seq': '{emq}:node-seq', nodes: '{emq}:nodes', procs: '{emq}:procs' };

const fresh = (prefix: string) => prefix + randomBytes(5).toString('hex');

/** One scenario's names and variables. */
export class Scope {
  readonly Q = fresh('cq');
  readonly T = fresh('ct');
  readonly NS = fresh('cn');
  private readonly vars = new Map<string, string>();

  constructor() {
    this.vars.set('Q', this.Q);
    this.vars.set('T', this.T);
    this.vars.set('NS', this.NS);
  }

  /** Binds `$name` (README `$bind`). */
  bind(name: string, value: string): void {
    if (['Q', 'T', 'NS'].includes(name) || MINTED.test(name)) {
      throw new ScenarioFormatError(`"$bind": "${name}" would shadow a runner variable`);
    }
    this.vars.set(name, value);
  }

  /** The value of one variable; mints `$job_x`/`$evt_x`/`$ver_x` at first use. */
  value(name: string): string {
    const v = this.vars.get(name);
    if (v !== undefined) return v;
    if (MINTED.test(name)) {
      const id = minter.next(name.slice(0, 3));
      this.vars.set(name, id);
      return id;
    }
    throw new ScenarioFormatError(`unknown variable $${name} (not bound by an earlier "$bind", not a minted $job_/$evt_/$ver_ name)`);
  }

  /** Substitutes variables; `escape` is applied to each substituted value (for regexes). */
  vars$(s: string, escape: (v: string) => string = (v) => v): string {
    return s.replace(TOKEN, (_, name: string) => (name === '$' ? '$' : escape(this.value(name))));
  }

  /** Rewrites one string: a key reference (`@…`), `@@…` (a literal `@`), or plain text with variables. */
  text(s: string): string {
    if (s.startsWith('@@')) return this.vars$(s.slice(1));
    if (s.startsWith('@')) return this.key(s.slice(1));
    return this.vars$(s);
  }

  /** Rewrites a regex of `$match`: variables are substituted as literal text. */
  regex(s: string): RegExp {
    return new RegExp(this.vars$(s, (v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'u');
  }

  private key(ref: string): string {
    const q = `emq:{${this.Q}}:`;
    const t = `emq:{${this.T}}:`;
    const ns = `emq:{${this.NS}}:`;
    if (QUEUE_KEYS.includes(ref)) return q + ref;
    if (ref.startsWith('job:')) return q + 'job:' + this.vars$(ref.slice(4));
    if (BUS_KEYS.includes(ref)) return t + ref;
    if (ref.startsWith('bus:seg:')) return t + 'bus:seg:' + this.vars$(ref.slice(8));
    if (CACHE_KEYS.includes(ref)) return ns + ref;
    if (ref.startsWith('cache:tag:')) return ns + 'cache:tag:' + this.vars$(ref.slice(10));
    if (ref.startsWith('cache:mark:')) return ns + 'cache:mark:' + this.vars$(ref.slice(11));
    if (ref.startsWith('cache:entry:')) return `emq:{c:${this.NS}:${this.vars$(ref.slice(12))}}:entry`;
    if (ref.startsWith('cache:lease:')) return `emq:{c:${this.NS}:${this.vars$(ref.slice(12))}}:lease`;
    const node = NODE_KEYS[ref];
    if (node) return node;
    throw new ScenarioFormatError(`unknown key reference @${ref} (write @@… for a literal string starting with @)`);
  }
}

/** True when the scenario names a node-lease key anywhere (then snapshots include them). */
export function mentionsNodeKeys(value: unknown): boolean {
  if (typeof value === 'string') return Object.keys(NODE_KEYS).some((k) => value === '@' + k);
  if (Array.isArray(value)) return value.some(mentionsNodeKeys);
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).some(([k, v]) => mentionsNodeKeys(k) || mentionsNodeKeys(v));
  }
  return false;
}
