import type { ValkeyClient } from '../core/connection/index.js';
import { InvalidIdError } from '../core/errors.js';
import { assertBrandedId } from '../core/ids.js';
import { MAX_BUSINESS_ID_BYTES, hasJobIdForm, isBusinessId, type QueueKeys } from '../core/keys.js';

/**
 * Throws `InvalidIdError` unless `id` is a job's id as every surface takes it: a branded job id
 * (a string of its form is always one), or a business id (docs/queue.md, business ids).
 */
export function assertJobIdOrRef(id: unknown): asserts id is string {
  if (typeof id === 'string' && hasJobIdForm(id)) return assertBrandedId(id, 'job');
  if (!isBusinessId(id)) {
    const shown = typeof id === 'string' ? JSON.stringify(id.slice(0, 40)) : typeof id;
    throw new InvalidIdError(`${shown} is neither a branded job id nor a business id (1..${MAX_BUSINESS_ID_BYTES} bytes, no control characters)`);
  }
}

/**
 * The wire id of `idOrRef` in queue `k`: a branded id as it is, a business id through the queue's
 * refs hash (one HGET), undefined when no job holds it. `InvalidIdError` for anything else.
 */
export async function resolveJobId(client: ValkeyClient, k: QueueKeys, idOrRef: string): Promise<string | undefined> {
  assertJobIdOrRef(idOrRef);
  if (hasJobIdForm(idOrRef)) return idOrRef;
  return (await client.hget(k.refs, idOrRef)) ?? undefined;
}
