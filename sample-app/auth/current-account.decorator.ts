import { createParamDecorator, UnauthorizedException, type ExecutionContext } from '@nestjs/common';
import type { AuthedRequest } from './api-key.guard.js';

/** The account the request's API key acts for (on a route behind `ApiKeyGuard`). */
export const CurrentAccount = createParamDecorator((_data: unknown, ctx: ExecutionContext): string => {
  const account = ctx.switchToHttp().getRequest<AuthedRequest>().account;
  if (account === undefined) throw new UnauthorizedException('this route needs ApiKeyGuard');
  return account;
});
