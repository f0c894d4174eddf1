import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import { InvalidOptionError } from '../core/errors.js';
import { normaliseHost, normaliseOrigin } from './dashboard-security.js';

/** Options of `EchoMqDashboardModule.register` (docs/dashboard.md). */
export interface EchoMqDashboardOptions {
  /** Where the dashboard is mounted (default `/echomq`); under the app's global prefix, if any. */
  readonly path?: string;
  /**
   * Who may see it (required): a Nest guard, as a class (resolved in the dashboard's module, with
   * `imports` for its dependencies) or an instance. It runs on every page and every action; a
   * refusal is the guard's own (403 by default). Pass a guard that returns true to open it.
   */
  readonly guard: CanActivate | Type<CanActivate>;
  /** Modules the guard class depends on. */
  readonly imports?: ModuleMetadata['imports'];
  /** No buttons, and every action is refused (403). Default false. */
  readonly readOnly?: boolean;
  /** How often the page refreshes its counts and charts in place, ms (0 = never; default 2,000). */
  readonly refreshMs?: number;
  /**
   * The throughput and latency charts, read from the history consumers store in Valkey
   * (docs/dashboard.md, "Charts"); `false` for none. Default true.
   */
  readonly charts?: boolean;
  /**
   * The `Host` header values the mount answers (`ops.example.com`, any port; `127.0.0.1:3000`,
   * that port): any other Host is refused with 421, and a POST's `Origin` must be `http(s)://` one
   * of them. Set it to shut out DNS rebinding (docs/dashboard.md, "Hosts and origins"). Default:
   * no Host check.
   */
  readonly allowedHosts?: readonly string[];
  /** The origins a POST may come from (`https://ops.example.com`); default: those of `allowedHosts`. */
  readonly allowedOrigins?: readonly string[];
}

/** The options with defaults applied. */
export interface ResolvedDashboardOptions {
  /** The normalised mount path (`/echomq`, never a trailing slash; `''` for the root). */
  readonly path: string;
  /** The guard. */
  readonly guard: CanActivate | Type<CanActivate>;
  /** Mutations off. */
  readonly readOnly: boolean;
  /** Refresh period, ms. */
  readonly refreshMs: number;
  /** Charts on. */
  readonly charts: boolean;
  /** The allowed `Host` values, normalised (undefined: no Host check). */
  readonly allowedHosts?: readonly string[];
  /** The allowed POST origins, normalised (undefined: those of the allowed hosts). */
  readonly allowedOrigins?: readonly string[];
}

/** A list option of strings, each checked by `one`. */
function listOf(v: unknown, what: string, one: (entry: unknown) => string): readonly string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length === 0) throw new InvalidOptionError(`${what} must be a non-empty array of strings`);
  return v.map(one);
}

const intIn = (v: unknown, lo: number, hi: number, what: string): void => {
  if (v !== undefined && (!Number.isSafeInteger(v) || (v as number) < lo || (v as number) > hi)) throw new InvalidOptionError(`${what} must be an integer ${lo}..${hi}, got ${String(v)}`);
};

/** Checks the options (EMQ_BAD_OPTION) and applies the defaults. */
export function resolveDashboardOptions(o: EchoMqDashboardOptions): ResolvedDashboardOptions {
  if (typeof o !== 'object' || o === null) throw new InvalidOptionError('EchoMqDashboardModule.register takes { path?, guard, readOnly? }');
  const g = o.guard as unknown;
  const isGuard = typeof g === 'function' || (typeof g === 'object' && g !== null && typeof (g as CanActivate).canActivate === 'function');
  if (!isGuard) throw new InvalidOptionError('the dashboard needs a guard (a CanActivate class or instance); pass one that returns true to leave it open');
  const path = (o.path ?? '/echomq').replace(/\/+$/, '');
  if (path !== '' && !/^(\/[A-Za-z0-9._~-]+)+$/.test(path)) throw new InvalidOptionError(`dashboard path must look like /echomq (letters, digits, . _ ~ -), got ${JSON.stringify(o.path)}`);
  intIn(o.refreshMs, 0, 3_600_000, 'refreshMs');
  if (o.charts !== undefined && typeof o.charts !== 'boolean') throw new InvalidOptionError('charts must be true or false');
  if ('throughput' in o) throw new InvalidOptionError('throughput is gone: the charts read the history consumers store in Valkey (docs/dashboard.md, "Charts"); use charts: false for none');
  const allowedHosts = listOf(o.allowedHosts, 'allowedHosts', normaliseHost);
  const allowedOrigins = listOf(o.allowedOrigins, 'allowedOrigins', normaliseOrigin);
  return { path, guard: o.guard, readOnly: o.readOnly === true, refreshMs: o.refreshMs ?? 2000, charts: o.charts !== false, allowedHosts, allowedOrigins };
}
