import { createHash, timingSafeEqual } from 'node:crypto';
import { ForbiddenException, Inject, Injectable, SetMetadata, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { EXCHANGE_CONFIG, type ExchangeConfig } from '../config/exchange.config.js';

/** The header that carries an account's API key. */
export const API_KEY_HEADER = 'x-api-key';

/** The request as the guard reads and marks it (Express and compatible). */
export interface AuthedRequest {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly params?: Readonly<Record<string, string>>;
  /** The account the key acts for, set by `ApiKeyGuard`. */
  account?: string;
  /** The same, as `CacheInterceptor` reads its owner for `@CacheScope('user')` routes. */
  user?: { readonly id: string };
}

const OWN_ACCOUNT_PARAM = 'exchange:own-account-param';

/**
 * Marks a route whose route parameter `param` names an account: `ApiKeyGuard` answers 403 unless
 * it is the key's account (`@OwnAccount('id')` on `GET /accounts/:id/positions`).
 */
export const OwnAccount = (param: string) => SetMetadata(OWN_ACCOUNT_PARAM, param);

const digest = (key: string): Buffer => createHash('sha256').update(key).digest();

/**
 * Authenticates a request by its `x-api-key` header: 401 without one or with a key no account
 * has; on a route marked `@OwnAccount(param)`, 403 when the parameter names another account.
 * Sets `req.account` (read it with `@CurrentAccount()`) and `req.user = { id: account }` (the
 * owner of per-user cached responses).
 *
 * Keys are compared in constant time: the given key's SHA-256 against every account's, with
 * `timingSafeEqual` and no early exit, so the time taken says nothing about how much of a key
 * was right (hashing first makes every comparison the same length).
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly keys: readonly { readonly account: string; readonly digest: Buffer }[];

  constructor(
    @Inject(EXCHANGE_CONFIG) config: ExchangeConfig,
    private readonly reflector: Reflector,
  ) {
    this.keys = [...config.accounts.values()].map((a) => ({ account: a.id, digest: digest(a.apiKey) }));
  }

  /** The account whose key is `key`, if any (constant time in the key). */
  accountOf(key: string): string | undefined {
    const given = digest(key);
    let found: string | undefined;
    for (const k of this.keys) if (timingSafeEqual(k.digest, given)) found = k.account;
    return found;
  }

  /** Authenticates, checks the route's account parameter, and marks the request. */
  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    const header = req.headers[API_KEY_HEADER];
    const key = typeof header === 'string' ? header : undefined;
    if (!key) throw new UnauthorizedException(`an ${API_KEY_HEADER} header is required`);
    const account = this.accountOf(key);
    if (account === undefined) throw new UnauthorizedException(`unknown ${API_KEY_HEADER}`);
    const param = this.reflector.getAllAndOverride<string | undefined>(OWN_ACCOUNT_PARAM, [ctx.getHandler(), ctx.getClass()]);
    const named = param === undefined ? undefined : req.params?.[param];
    if (named !== undefined && named !== account) throw new ForbiddenException(`this key acts for account ${account} only`);
    req.account = account;
    req.user = { id: account };
    return true;
  }
}
