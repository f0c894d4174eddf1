/** Stable error codes: every refusal EchoMQ makes carries one of these. */
export type EchoMqErrorCode =
  | 'EMQ_BAD_NAME'
  | 'EMQ_BAD_ID'
  | 'EMQ_BAD_PAYLOAD'
  | 'EMQ_PAYLOAD_TOO_LARGE'
  | 'EMQ_BATCH_TOO_LARGE'
  | 'EMQ_BAD_OPTION'
  | 'EMQ_STALE_TOKEN'
  | 'EMQ_VERSION'
  | 'EMQ_UNAVAILABLE'
  | 'EMQ_NOT_FOUND'
  | 'EMQ_BAD_ARG'
  | 'EMQ_WRONGTYPE'
  | 'EMQ_ID_COLLISION'
  | 'EMQ_OOM'
  | 'EMQ_NOPERM'
  | 'EMQ_AUTH'
  | 'EMQ_READONLY'
  | 'EMQ_BUSY'
  | 'EMQ_LOADING'
  | 'EMQ_EVICTION_POLICY'
  | 'EMQ_NODE_LEASE'
  | 'EMQ_LEASE_LOST'
  | 'EMQ_INTERNAL'
  | 'EMQ_FLOW_CYCLE'
  | 'EMQ_FLOW_TOO_LARGE'
  | 'EMQ_FLOW_TOO_DEEP'
  | 'EMQ_BAD_SCHEDULE'
  | 'EMQ_BAD_CURSOR'
  | 'EMQ_JOB_STATE'
  | 'EMQ_NO_HANDLER';

/** Base class of every EchoMQ error; `code` is stable across releases. */
export class EchoMqError extends Error {
  constructor(
    /** The stable code of this refusal (docs/protocol.md §7). */
    readonly code: EchoMqErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A queue, topic or namespace name broke the key grammar. */
export class InvalidNameError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_NAME', message);
  }
}

/** A string is not a well-formed 14-byte branded id. */
export class InvalidIdError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_ID', message);
  }
}

/** A payload is not representable as JSON. */
export class InvalidPayloadError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_PAYLOAD', message);
  }
}

/** A payload's JSON form is larger than the configured limit. */
export class PayloadTooLargeError extends EchoMqError {
  constructor(size: number, limit: number) {
    super('EMQ_PAYLOAD_TOO_LARGE', `payload is ${size} bytes, the limit is ${limit}`);
  }
}

/** A batch has more items than one script call accepts. */
export class BatchTooLargeError extends EchoMqError {
  constructor(size: number, limit: number) {
    super('EMQ_BATCH_TOO_LARGE', `batch has ${size} items, the limit is ${limit}`);
  }
}

/** An option is out of range or of the wrong type. */
export class InvalidOptionError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_OPTION', message);
  }
}

/** A schedule is malformed: a bad cron expression or time zone, an interval out of range, a cron that never fires. */
export class InvalidScheduleError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_SCHEDULE', message);
  }
}

/** The fencing token no longer holds the job: its lease expired and it moved on. */
export class StaleTokenError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_STALE_TOKEN', message);
  }
}

/**
 * The reason `job.signal` aborts with when the running job's lease was lost (the extend was
 * refused: the lease ran out during a stall and the job was reaped or re-claimed, or it
 * finished elsewhere). Its outcome is ignored; the job goes on without this holder. A
 * `StaleTokenError` (EMQ_STALE_TOKEN), so one `instanceof` covers it and a refused fenced write.
 */
export class LeaseLostError extends StaleTokenError {
  constructor(
    /** The job whose lease was lost. */
    readonly jobId: string,
    /** The queue of the job. */
    readonly queue: string,
    message = `job ${jobId} of "${queue}" lost its lease (its token is stale): another holder or the reaper has it; this attempt's outcome is ignored`,
  ) {
    super(message);
  }
}

/** The runtime and the data or scripts speak different protocol versions. */
export class VersionMismatchError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_VERSION', message);
  }
}

/** Valkey could not be reached within the configured timeout. */
export class ValkeyUnavailableError extends EchoMqError {
  constructor(message: string, cause?: unknown) {
    super('EMQ_UNAVAILABLE', message, { cause });
  }
}

/**
 * Valkey refused a command: the message is the server's text, the cause its original reply.
 * The subclasses below carry the codes of the refusals a deployment meets in operation.
 */
export class ServerRefusalError extends EchoMqError {
  constructor(code: EchoMqErrorCode, message: string, cause?: unknown) {
    super(code, message, { cause });
  }
}

/** `OOM`: Valkey is over `maxmemory` (under `noeviction`) and refused a write. */
export class OutOfMemoryError extends ServerRefusalError {
  constructor(message: string, cause?: unknown) {
    super('EMQ_OOM', message, cause);
  }
}

/** `NOPERM` / `ACL failure in script`: the ACL user may not run a command or touch a key or channel. */
export class PermissionDeniedError extends ServerRefusalError {
  constructor(message: string, cause?: unknown) {
    super('EMQ_NOPERM', message, cause);
  }
}

/** `WRONGTYPE`: a key holds another type than the protocol expects (a foreign key in EchoMQ's keyspace). */
export class WrongTypeError extends ServerRefusalError {
  constructor(message: string, cause?: unknown) {
    super('EMQ_WRONGTYPE', message, cause);
  }
}

/** `NOAUTH` / `WRONGPASS`: the connection is not authenticated, or the credentials are wrong. */
export class AuthenticationError extends ServerRefusalError {
  constructor(message: string, cause?: unknown) {
    super('EMQ_AUTH', message, cause);
  }
}

/** `READONLY`: the connection reached a replica, which refuses writes. */
export class ReadOnlyError extends ServerRefusalError {
  constructor(message: string, cause?: unknown) {
    super('EMQ_READONLY', message, cause);
  }
}

/** `BUSY`: a script has run past `busy-reply-threshold`; the server answers nothing else meanwhile. */
export class ServerBusyError extends ServerRefusalError {
  constructor(message: string, cause?: unknown) {
    super('EMQ_BUSY', message, cause);
  }
}

/** `LOADING`: the server is loading its dataset after a restart. */
export class ServerLoadingError extends ServerRefusalError {
  constructor(message: string, cause?: unknown) {
    super('EMQ_LOADING', message, cause);
  }
}

/** The server's `maxmemory-policy` may evict EchoMQ's data (`allkeys-*`), and no opt-out was given. */
export class EvictionPolicyError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_EVICTION_POLICY', message);
  }
}

/** A freshly minted job id was already taken (another process minted it too) however often it was re-minted. */
export class IdCollisionError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_ID_COLLISION', message);
  }
}

/** A flow spec's object graph has a cycle (a node is its own ancestor): nothing was written. */
export class FlowCycleError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_FLOW_CYCLE', message);
  }
}

/** A flow has more nodes, or a node more children, than the bounds allow (or an outbox is full). */
export class FlowTooLargeError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_FLOW_TOO_LARGE', message);
  }
}

/** A flow is nested deeper than the depth bound: nothing was written. */
export class FlowTooDeepError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_FLOW_TOO_DEEP', message);
  }
}

/** An admin call named a queue, topic, namespace, group or job that does not exist: nothing was written. */
export class NotFoundError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_NOT_FOUND', message);
  }
}

/**
 * A job control found its job in a state it does not apply to (e.g. `changePriority` of a job
 * that is active, finished or in a fair lane): nothing was written.
 */
export class JobStateError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_JOB_STATE', message);
  }
}

/**
 * A job whose name no handler of its queue takes (no `@Processor(queue, { name })` for it and no
 * catch-all `@Processor(queue)`). The job fails fatally (straight to dead, no retry): a retry
 * would find the same handlers. The message names the job's name and the names that are handled.
 */
export class NoHandlerError extends EchoMqError {
  constructor(
    /** The job's name (undefined: a job enqueued without one). */
    readonly jobName: string | undefined,
    /** The names this queue's handlers take. */
    readonly handled: readonly string[],
    queue: string,
  ) {
    const shown = jobName === undefined ? 'a job without a name' : `job name ${JSON.stringify(jobName)}`;
    const names = handled.length === 0 ? 'none' : handled.map((n) => JSON.stringify(n)).join(', ');
    super('EMQ_NO_HANDLER', `EMQ_NO_HANDLER: ${shown} has no handler on queue "${queue}" (handled names: ${names}; no catch-all @Processor("${queue}"))`);
  }
}

/** A page cursor is not one this runtime handed out (malformed, or for another status or queue). */
export class InvalidCursorError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_CURSOR', message);
  }
}

/**
 * Ids cannot be minted now: this process does not certainly hold its node number (after a
 * reconnect, a stall, or renewals that failed). Transient: `await ids.ready()` renews and waits.
 */
export class NodeLeaseError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_NODE_LEASE', message);
  }
}

/**
 * A coordination lease, permit or leadership term (docs/coordination.md) is no longer certainly
 * held: a renewal was refused (a newer token exists, or it was released), or its local deadline
 * passed without a successful renewal (a pause, a partition). The reason of the holder's aborted
 * `signal` (code EMQ_LEASE_LOST); stop acting on it. (A job's lost lease is `LeaseLostError`.)
 */
export class CoordinationLostError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_LEASE_LOST', message);
  }
}
