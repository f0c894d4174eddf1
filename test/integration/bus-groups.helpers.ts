import type { Redis } from 'iovalkey';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { topicKeys } from '../../src/core/keys.js';
import { GroupConsumer } from '../../src/bus/consumer-group/group-consumer.js';
import type { GroupConsumerConfig } from '../../src/bus/consumer-group/options.js';
import type { BusEvent } from '../../src/bus/consumer-group/options.js';
import type { GroupLoss } from '../../src/bus/consumer-group/losses.js';

/** Appends one entry the documented way (`XADD <log> * p <json>`); returns its stream id. */
export async function append(raw: Redis, topic: string, payload: unknown): Promise<string> {
  return (await raw.xadd(topicKeys(topic).log, '*', 'p', JSON.stringify(payload))) as string;
}

/** What a test member saw. */
export interface MemberLog {
  readonly events: BusEvent[];
  readonly losses: GroupLoss[];
}

/** Starts an in-process group member with a recording handler wrapped around `body`. */
export async function startMember(
  conn: EchoMqConnection,
  cfg: Omit<GroupConsumerConfig, 'handler'> & { body?: (e: BusEvent) => Promise<void> | void },
): Promise<{ member: GroupConsumer; log: MemberLog }> {
  const log: MemberLog = { events: [], losses: [] };
  const member = new GroupConsumer(conn, {
    blockMs: 500,
    ...cfg,
    handler: async (e) => {
      log.events.push(e);
      await cfg.body?.(e);
    },
  });
  member.losses$.subscribe((l) => log.losses.push(l));
  await member.start();
  return { member, log };
}

/** The pending-entry count of a group (XPENDING summary). */
export async function pendingCount(raw: Redis, topic: string, group: string): Promise<number> {
  const r = (await raw.call('XPENDING', topicKeys(topic).log, group)) as [number | string, ...unknown[]];
  return Number(r[0]);
}

/** The dead-letter entries of a topic, as field maps. */
export async function deadLetters(raw: Redis, topic: string): Promise<Record<string, string>[]> {
  const rows = await raw.xrange(topicKeys(topic).dead, '-', '+');
  return rows.map(([, fields]) => {
    const o: Record<string, string> = {};
    for (let i = 0; i < fields.length; i += 2) o[fields[i]] = fields[i + 1];
    return o;
  });
}
