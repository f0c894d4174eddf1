import type { FlowSpec } from '@echomq/nestjs';
import type { Side, Trade } from '../engine/engine.types.js';
import { settlementJobId } from '../engine/ids.js';
import { FILLS_QUEUE, SETTLEMENTS_QUEUE } from '../exchange.names.js';

/** The payload of a fill (one side of a trade); a type, not an interface, so it is `Json`. */
export type FillLeg = {
  readonly trade: Trade;
  readonly side: Side;
};

/** What a fill reports to its settlement. */
export interface FillResult {
  readonly account: string;
  readonly side: Side;
  readonly units: number;
  /** Cash moved, in ticks (a decimal string; negative for the buyer). */
  readonly cashTicks: string;
}

/**
 * The settlement flow of one trade: a `settlements` parent waiting for two `fills` children, one
 * per side, all with ids derived from the trade (so creating it twice creates it once). A leg
 * that fails is retried (3 attempts, 200 ms apart); one that still fails buries the settlement
 * (`onFailure: 'fail'`) and cancels the other leg, and nothing moves.
 */
export function settlementFlow(trade: Trade): FlowSpec<Trade> {
  const leg = (side: Side): FlowSpec<FillLeg> => ({
    queue: FILLS_QUEUE,
    key: side,
    id: settlementJobId(trade, side),
    payload: { trade, side },
    attempts: 3,
    backoff: { type: 'fixed', delayMs: 200 },
  });
  return { queue: SETTLEMENTS_QUEUE, id: settlementJobId(trade, 'settle'), payload: trade, attempts: 5, children: [leg('buy'), leg('sell')] };
}
