import type { Redis } from 'iovalkey';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import type { QueueService } from '../../src/queue/queue-service.js';
import { BusService, CacheService } from '../../src/index.js';
import { CacheKeys, globalKeys, queueKeys, topicKeys } from '../../src/protocol.js';
import { buryJobs } from './dashboard.js';
import { eventually, randomQueue } from './valkey.js';

/**
 * Bad data an operator (or anyone with the base `~{emq}:*` grant) can plant, under one random
 * prefix so a registry page `after: prefix` starts with it: registry entries that are not names
 * (a space, a control character, too long), a queue, a topic and a namespace whose keys are of
 * another type, a job row of another type, a payload that is not JSON, and index members that
 * are not job ids or whose score is not an instant.
 */
export interface BadEntries {
  /** Every name planted starts with this (a legal name itself: pass it as `after`). */
  readonly prefix: string;
  /** A readable queue holding the bad jobs below, and a good pending job. */
  readonly good: string;
  /** A queue whose `done` index is a string. */
  readonly wrongType: string;
  /** Registry entries that are not queue names. */
  readonly badNames: readonly string[];
  /** In `good`: a dead job whose row is a list. */
  readonly rowIsList: string;
  /** In `good`: a dead job whose payload is not JSON. */
  readonly badPayload: string;
  /** In `good`: a dead job with a readable row. */
  readonly dead: string;
  /** A readable topic, one whose dead letters key is a string, and a registry entry that is not a topic name. */
  readonly topic: string;
  readonly wrongTopic: string;
  readonly badTopic: string;
  /** A namespace whose log is a string, and a registry entry that is not a namespace name. */
  readonly wrongNs: string;
  readonly badNs: string;
  /** Removes everything planted. */
  clean(): Promise<void>;
}

/** Plants the bad entries (through `raw`, a plain client with every permission). */
export async function plantBadEntries(raw: Redis, conn: EchoMqConnection, queues: QueueService): Promise<BadEntries> {
  const prefix = randomQueue('bad');
  const good = `${prefix}-good`;
  const wrongType = `${prefix}-wrongtype`;
  const badNames = [`${prefix} bad name!`, `${prefix}\x1b[2Jctl`, `${prefix}-${'x'.repeat(200)}`];
  const [rowIsList, badPayload, dead] = await buryJobs(conn, queues, good, [{ n: 2 }, { n: 3 }, { n: 4 }]);
  await queues.enqueue(good, { n: 1 }); // after the burial: it stays pending
  const k = queueKeys(good);
  await raw.del(k.job(rowIsList));
  await raw.rpush(k.job(rowIsList), 'not', 'a', 'hash');
  await raw.hset(k.data, badPayload, 'not json{');
  await raw.zadd(k.dead, 1, 'not-a-job-id'); // oldest: a member that is not an id
  await queues.enqueue(wrongType, { n: 1 });
  await raw.set(queueKeys(wrongType).done, 'not a zset');
  for (const n of badNames) await raw.zadd(globalKeys.queues, 0, n);

  const bus = new BusService(conn, { trimIntervalMs: 0 });
  const topic = `${prefix}-topic`;
  const wrongTopic = `${prefix}-wrongtopic`;
  const badTopic = `${prefix} bad topic!`;
  await bus.publishMany(topic, [{ n: 1 }, { n: 2 }]);
  await raw.xgroup('CREATE', topicKeys(topic).log, 'g1', '0');
  await bus.publish(wrongTopic, { n: 1 });
  await raw.set(topicKeys(wrongTopic).dead, 'not a stream');
  await raw.zadd(globalKeys.topics, 0, badTopic);
  await bus.close();

  const wrongNs = `${prefix}-wrongns`;
  const badNs = `${prefix} bad ns!`;
  await raw.set(new CacheKeys(wrongNs).log, 'not a stream');
  await raw.zadd(globalKeys.caches, 0, wrongNs, 0, badNs);
  const cache = new CacheService(conn);
  await cache.close();

  await eventually(async () => (await raw.zscore(globalKeys.queues, good)) !== null && (await raw.zscore(globalKeys.topics, topic)) !== null, 5000, 'announced');
  return {
    prefix,
    good,
    wrongType,
    badNames,
    rowIsList,
    badPayload,
    dead,
    topic,
    wrongTopic,
    badTopic,
    wrongNs,
    badNs,
    async clean() {
      await raw.zrem(globalKeys.queues, ...badNames, good, wrongType);
      await raw.zrem(globalKeys.topics, badTopic, topic, wrongTopic);
      await raw.zrem(globalKeys.caches, badNs, wrongNs);
      const keys: string[] = [];
      for (const pattern of [`emq:{${good}}:*`, `emq:{${wrongType}}:*`, `emq:{${topic}}:*`, `emq:{${wrongTopic}}:*`, `emq:{${wrongNs}}:*`]) {
        let cursor = '0';
        do {
          const [next, found] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          cursor = next;
          keys.push(...found);
        } while (cursor !== '0');
      }
      if (keys.length) await raw.del(...keys);
    },
  };
}
