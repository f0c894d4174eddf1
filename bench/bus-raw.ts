/**
 * The Bus's anchors: what a hand-written client does over the same stream with plain commands.
 * A raw consumer-group loop (`XREADGROUP … COUNT 50 BLOCK`, the handlers, one `XACK` of the batch
 * after them) against `GroupConsumer`, and raw `XADD`s (100 in flight, or pipelines of 1,000)
 * against `BusService.publish` / `publishMany`. Same stream shape as EchoMQ's (`emq:{t}:bus:log`,
 * one field `p` holding the JSON text), same payloads, same group name.
 */
import { Redis } from 'iovalkey';
import { topicKeys } from '@echomq/nestjs/protocol';
import { BATCH, IN_FLIGHT, inLanes, payload100 } from './common.js';
import { BENCH_GROUP, type Member } from './bus.js';

/** Entries one raw read asks for (`XREADGROUP … COUNT`). */
export const RAW_READ_COUNT = 50;

/**
 * A second raw anchor of `bus_group_c1_per_s`, reading `COUNT 1` (one round trip per event, as
 * `GroupConsumer` at concurrency 1 reads): what the c1 row costs without reading ahead.
 */
export const RAW_C1_COUNT1_METRIC = 'raw_group_c1_count1_per_s';

/** `BLOCK` of the raw read, ms (only an idle loop waits; the timed part always finds entries). */
const RAW_BLOCK_MS = 1000;

/** One `XREADGROUP` entry as iovalkey returns it: the id and the flat field list. */
type RawEntry = [string, string[]];

/** The JSON payload of a raw entry (`p`), or null when the entry has no `p` field. */
export function rawPayload(fields: readonly string[]): unknown {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'p') return JSON.parse(fields[i + 1]);
  return null;
}

/**
 * A raw group member of `topic`: on its own connection, `XREADGROUP GROUP bench raw-1 COUNT 50
 * BLOCK 1000 STREAMS <log> >`, then the batch's handlers `concurrency` at a time (1: one after
 * another; 50: all of a full batch at once), then one `XACK` of the whole batch; and again. The
 * handler parses the payload (as `GroupConsumer` does before its handler) and calls `onEvent`.
 * `count` replaces the 50 (`RAW_C1_COUNT1_METRIC` reads 1 at a time, as `GroupConsumer` at
 * concurrency 1 does: it asks for its free slots).
 */
export function openRawMember(url: string, topic: string, concurrency: number, onEvent: (payload: unknown) => void, count = RAW_READ_COUNT): Member {
  const client = new Redis(url, { maxRetriesPerRequest: null });
  const log = topicKeys(topic).log;
  const handler = async (e: RawEntry): Promise<void> => {
    onEvent(rawPayload(e[1]));
  };
  let stopping = false;
  let loop: Promise<void> = Promise.resolve();
  const run = async (): Promise<void> => {
    while (!stopping) {
      const reply = (await client.call('XREADGROUP', 'GROUP', BENCH_GROUP, 'raw-1', 'COUNT', count, 'BLOCK', RAW_BLOCK_MS, 'STREAMS', log, '>')) as [string, RawEntry[]][] | null;
      const entries = reply?.[0]?.[1] ?? [];
      if (entries.length === 0) continue;
      for (let i = 0; i < entries.length; i += concurrency) await Promise.all(entries.slice(i, i + concurrency).map(handler));
      await client.call('XACK', log, BENCH_GROUP, ...entries.map((e) => e[0]));
    }
  };
  return {
    start: async () => {
      await client.call('XGROUP', 'CREATE', log, BENCH_GROUP, '0', 'MKSTREAM').catch((err: unknown) => {
        if (!String(err).includes('BUSYGROUP')) throw err;
      });
      loop = run().catch((err: unknown) => {
        if (!stopping) console.error(`[raw bus] ${String(err)}`);
      });
    },
    close: async () => {
      stopping = true;
      client.disconnect(); // a read blocked in BLOCK ends with the connection
      await loop;
    },
  };
}

/** A raw publisher: one connection that appends `XADD <log> * p <json>`. */
export interface RawPublisher {
  /** `n` single `XADD`s, `IN_FLIGHT` at a time (pipelined on the connection as they queue up). */
  single(topic: string, n: number, make?: (i: number) => unknown): Promise<void>;
  /** `n` `XADD`s in pipelines of `BATCH`, one pipeline in flight. */
  batch(topic: string, n: number, make?: (i: number) => unknown): Promise<void>;
  close(): Promise<void>;
}

/** Opens a raw publisher on `url`. */
export function openRawPublisher(url: string): RawPublisher {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  return {
    single: (topic, n, make = payload100) => {
      const log = topicKeys(topic).log;
      return inLanes(n, IN_FLIGHT, (i) => client.xadd(log, '*', 'p', JSON.stringify(make(i))));
    },
    batch: async (topic, n, make = payload100) => {
      const log = topicKeys(topic).log;
      for (let i = 0; i < n; i += BATCH) {
        const p = client.pipeline();
        for (let j = i; j < Math.min(n, i + BATCH); j++) p.xadd(log, '*', 'p', JSON.stringify(make(j)));
        const replies = (await p.exec()) ?? [];
        const failed = replies.find(([err]) => err);
        if (failed) throw failed[0];
      }
    },
    close: async () => {
      await client.quit();
    },
  };
}
