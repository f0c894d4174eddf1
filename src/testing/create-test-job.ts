import { DEFAULT_MAX_PAYLOAD_BYTES, type Json } from '../core/codec.js';
import { InvalidOptionError, LeaseLostError } from '../core/errors.js';
import { WaitingForChildren } from '../queue/job-signals.js';
import { IdMinter, assertBrandedId } from '../core/ids.js';
import { assertName } from '../core/keys.js';
import { checkJobName } from '../core/extras.js';
import { encodeFlow } from '../queue/flows/index.js';
import { DEFAULT_FLOW_BOUNDS, type ChildResult, type FlowChildren, type FlowJob, type FlowSpec } from '../queue/flows/index.js';
import type { ChildFailurePolicy, ChildOutcome, Job } from '../queue/job.js';

/** What `createTestJob` lets a test choose; everything has a default. */
export interface TestJobOverrides {
  /** A branded job id (`job…`). Default: a freshly minted one. */
  readonly id?: string;
  /** The queue (key grammar). Default `"test"`. */
  readonly queue?: string;
  /** The attempt, 1..1000. Default 1. */
  readonly attempt?: number;
  /** The fencing token (decimal digits). Default `"1"`. */
  readonly token?: string;
  /** A signal of the test's own; `abort()` still fires the job's signal too. */
  readonly signal?: AbortSignal;
  /** The checkpoint an earlier attempt saved (`job.checkpointed`). Default none. */
  readonly checkpointed?: Json;
  /** The job's name (`job.name`; 1..128 bytes, no control characters). Default none. */
  readonly name?: string;
}

/** What a test job's handler wrote through `checkpoint`, `progress` and `log`, in order. */
export interface TestJobWrites {
  /** Every `checkpoint(state)` call's state. */
  readonly checkpoints: Json[];
  /** Every `progress(value)` call's value. */
  readonly progress: Json[];
  /** Every `log(line)` call's line. */
  readonly logs: string[];
}

/** A job made for a unit test: a real `Job` shape, plus a way to fire its signal. */
export interface TestJob<T = Json> extends Job<T> {
  /**
   * Aborts `signal`, as a lost lease (no `reason`: with `LeaseLostError`, as the runtime does) or
   * a shutdown past its deadline (`reason`: with an `Error` of that message) would.
   */
  abort(reason?: string): void;
  /** What the handler wrote (recorded, not sent anywhere). */
  readonly writes: TestJobWrites;
}

/** One child result handed to a `createTestFlowJob` parent; everything but the outcome's data has a default. */
export interface TestChild<R = Json> {
  /** Its key among its siblings. Default: its position ("0", "1", …). */
  readonly key?: string;
  /** Its queue. Default `"test-child"`. */
  readonly queue?: string;
  /** Its branded id. Default: minted. */
  readonly id?: string;
  /** Default `fail`. */
  readonly policy?: ChildFailurePolicy;
  /** Default `done`. */
  readonly outcome?: ChildOutcome;
  /** Its result (a `done` child). */
  readonly result?: R;
  /** Its error text (a failed or cancelled child). */
  readonly error?: string;
}

/** One `waitFor` call a test flow job recorded: the specs it was given and the ids it minted. */
export interface TestFanOut {
  /** The child specs `waitFor` was given. */
  readonly children: readonly FlowSpec[];
  /** The ids it minted for them, in order. */
  readonly ids: readonly string[];
}

/** A flow job made for a unit test: `children` as given, and every `waitFor` recorded. */
export interface TestFlowJob<T = Json, R = Json> extends FlowJob<T, R>, TestJob<T> {
  /** The `waitFor` calls so far, in order. */
  readonly fanOuts: readonly TestFanOut[];
}

/** Options of `createTestFlowJob`: the job's overrides and its children's results. */
export interface TestFlowJobOptions<R = Json> extends TestJobOverrides {
  /** The children the job was released with, and their outcomes. Default none. */
  readonly children?: readonly TestChild<R>[];
}

const minter = new IdMinter(0);

/**
 * A `Job` for unit-testing a `@Processor` handler without Valkey: `createTestJob({ sku: 'A1' })`
 * has a valid branded id, queue `"test"`, attempt 1, token `"1"` and a live `signal`; call
 * `job.abort()` to see how the handler reacts to a lost lease. Overrides are validated like the
 * real values (`InvalidIdError`, `InvalidNameError`, `InvalidOptionError`).
 */
export function createTestJob<T = Json>(payload: T, overrides: TestJobOverrides = {}): TestJob<T> {
  const id = overrides.id ?? minter.next('job');
  assertBrandedId(id, 'job');
  const queue = overrides.queue ?? 'test';
  assertName(queue, 'queue');
  const attempt = overrides.attempt ?? 1;
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > 1000) throw new InvalidOptionError(`attempt must be an integer in 1..1000, got ${String(attempt)}`);
  const token = overrides.token ?? '1';
  if (!/^\d{1,16}$/.test(token)) throw new InvalidOptionError(`token must be 1..16 decimal digits, got ${JSON.stringify(token)}`);
  const name = overrides.name === undefined ? undefined : checkJobName(overrides.name, 'name');
  const controller = new AbortController();
  const signal = overrides.signal ? AbortSignal.any([overrides.signal, controller.signal]) : controller.signal;
  const writes: TestJobWrites = { checkpoints: [], progress: [], logs: [] };
  return {
    id,
    queue,
    name,
    payload,
    attempt,
    token,
    signal,
    abort: (reason) => controller.abort(reason === undefined ? new LeaseLostError(id, queue, 'EchoMQ lease lost') : new Error(reason)),
    checkpointed: overrides.checkpointed,
    writes,
    checkpoint: async (state) => void writes.checkpoints.push(state),
    progress: async (value) => void writes.progress.push(value),
    log: async (line) => void writes.logs.push(line),
  };
}

/**
 * A `FlowJob` for unit-testing a `@Flow` step without Valkey: its `children` are built from the
 * given results as the runtime builds them (in order, by id and by key; a failed or cancelled
 * child under `ignore` is left out). `waitFor(specs)` validates the specs as the real one does
 * (names, payloads, bounds), records them with minted ids in `fanOuts`, and rejects with
 * `WaitingForChildren`, as the real one does once the fan-out is recorded. The children's result
 * type `R` is inferred from `children` (none given: `never`, which fits any handler's type).
 */
export function createTestFlowJob<T = Json, R = never>(payload: T, options: TestFlowJobOptions<R> = {}): TestFlowJob<T, R> {
  const { children: given = [], ...overrides } = options;
  const job = createTestJob(payload, overrides);
  const list: ChildResult<R>[] = [];
  given.forEach((c, i) => {
    const outcome = c.outcome ?? 'done';
    const policy = c.policy ?? 'fail';
    if (outcome !== 'done' && policy === 'ignore') return;
    const id = c.id ?? minter.next('job');
    assertBrandedId(id, 'job');
    const base = { id, queue: c.queue ?? 'test-child', key: c.key ?? String(i), policy, outcome };
    list.push(outcome === 'done' ? { ...base, result: c.result } : { ...base, error: c.error ?? `child ${outcome}` });
  });
  const children: FlowChildren<R> = {
    list,
    byId: Object.fromEntries(list.map((r) => [r.id, r])),
    byKey: Object.fromEntries(list.map((r) => [r.key, r])),
  };
  const fanOuts: TestFanOut[] = [];
  const waitFor = async (kids: readonly FlowSpec[]): Promise<never> => {
    if (!Array.isArray(kids) || kids.length === 0) throw new InvalidOptionError('a fan-out needs at least one child');
    const tree = encodeFlow({ queue: job.queue, payload: null, children: kids } as FlowSpec<unknown>, DEFAULT_FLOW_BOUNDS, () => DEFAULT_MAX_PAYLOAD_BYTES, () => minter.next('job'));
    const ids = tree.kids.map((k) => k.id);
    fanOuts.push({ children: kids, ids });
    throw new WaitingForChildren(ids);
  };
  return { ...job, children, waitFor, fanOuts };
}
