import { Subject, type Observable } from 'rxjs';

/**
 * What a consumer group lost or gave up on:
 * - `lost`: pending entries that were trimmed or deleted from the log before they were handled
 *   (they came back with no fields, or were gone from the log when an idle entry was claimed).
 * - `group-recreated`: the log or the group vanished under the loop (`NOGROUP`): the group was
 *   created again, and whatever the old log held past the group's position is gone; `count`,
 *   `first` and `last` say how many entries and which, from the member's last look at the group.
 * - `dead-lettered`: an entry reached the delivery limit and moved to the dead-letter log.
 */
export type GroupLossKind = 'lost' | 'group-recreated' | 'dead-lettered';

/** One report of lost or dead-lettered data. */
export interface GroupLoss {
  /** What happened (see `GroupLossKind`). */
  readonly kind: GroupLossKind;
  /** The topic concerned. */
  readonly topic: string;
  /** The consumer group concerned. */
  readonly group: string;
  /** The consumer (this process's member) that saw it. */
  readonly consumer: string;
  /** Branded event ids concerned (empty for `group-recreated`). */
  readonly ids: readonly string[];
  /** How many entries were lost or dead-lettered; absent when it cannot be known. */
  readonly count?: number;
  /** The oldest and newest entry concerned (branded event ids), when known. */
  readonly first?: string;
  /** The newest entry concerned (branded event id), when known. */
  readonly last?: string;
  /** A human-readable account, for logs. */
  readonly detail: string;
  /** When it was seen. */
  readonly at: Date;
}

// Private: a subscriber of the public stream cannot complete() or error() it for everyone else.
const losses = new Subject<GroupLoss>();

/**
 * Every loss any `GroupConsumer` in this process reports, whether it runs under Nest or not
 * (read-only; `BusService.losses$` in an application). Subscribe to alert on data loss; each
 * consumer also has its own `losses$`.
 */
export const processLosses$: Observable<GroupLoss> = losses.asObservable();

/** Sends a loss to `processLosses$` (the consumer loop's only way in). */
export function reportProcessLoss(loss: GroupLoss): void {
  losses.next(loss);
}
