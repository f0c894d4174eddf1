/**
 * The group loop is live by construction (issue 7, item 17, applied to the Bus): after any failed
 * step it sleeps and tries again, whatever the clock says, and a blocking connection it had to
 * drop is opened again by the next step, however many times that fails.
 */
import type { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import type { GroupConsumer } from '../../src/bus/consumer-group/group-consumer.js';
import { ALL, aclUser, type TestUser } from '../helpers/acl.js';
import { slowClock } from '../helpers/clock.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';
import { append, startMember, type MemberLog } from './bus-groups.helpers.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('the group loop after failures', () => {
  let raw: Redis;
  let user: TestUser;
  let conn: EchoMqConnection;
  let member: GroupConsumer | undefined;
  let restore: (() => void) | undefined;

  beforeAll(async () => {
    raw = rawClient();
    user = await aclUser(raw, ALL);
    conn = new EchoMqConnection({ url: testUrl(), username: user.username, password: user.password });
    await conn.open();
  });
  afterEach(async () => {
    restore?.();
    restore = undefined;
    await raw.call('CONFIG', 'SET', 'maxclients', '10000');
    await user.set(...ALL);
    await member?.stop(500);
    member = undefined;
  });
  afterAll(async () => {
    await conn.close();
    await user.drop();
    await raw.quit();
  });

  /** Starts a member recording its warnings; returns its log and the warnings. */
  async function start(topic: string, extra: object = {}): Promise<{ log: MemberLog; warnings: string[] }> {
    const warnings: string[] = [];
    const started = await startMember(conn, {
      topic,
      consumer: 'm-1',
      options: { group: 'g', ackTimeoutMs: 1000 },
      blockMs: 200,
      logger: { warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
      ...extra,
    });
    member = started.member;
    return { log: started.log, warnings };
  }

  it('opens a new blocking connection after a hung read, however often opening it fails', async () => {
    const topic = randomQueue('hung');
    const { log, warnings } = await start(topic, { hangMs: 300 });
    await append(raw, topic, { n: 1 });
    await eventually(() => log.events.length === 1, 5000, 'the first event');

    // Room for one connection less than are open, then every command hangs: the next read hangs
    // past its BLOCK, the watchdog drops its connection, and opening another one fails for a while.
    const clients = ((await raw.call('CLIENT', 'LIST')) as string).trim().split('\n').length;
    await raw.call('CONFIG', 'SET', 'maxclients', String(clients - 1));
    await raw.call('CLIENT', 'PAUSE', '1000', 'ALL');
    await eventually(() => warnings.filter((w) => /max number of clients|cannot connect/.test(w)).length >= 2, 15_000, 'failed reopens');
    await raw.call('CONFIG', 'SET', 'maxclients', '10000');

    await append(raw, topic, { n: 2 });
    await eventually(() => log.events.length === 2, 10_000, 'an event after the connection came back');
    expect(warnings.some((w) => /hung past its BLOCK/.test(w))).toBe(true);
  });

  it('resumes after every refused round even when its back-off timers fire early', async () => {
    const topic = randomQueue('refused');
    const { log, warnings } = await start(topic);
    restore = slowClock();
    for (let round = 1; round <= 5; round++) {
      await user.set(...ALL, '-xreadgroup');
      const seen = warnings.length;
      await eventually(() => warnings.slice(seen).some((w) => /NOPERM|no permissions/i.test(w)), 10_000, `a refused read in round ${round}`);
      await append(raw, topic, { round });
      await sleep(20);
      await user.set(...ALL);
      await eventually(() => log.events.length === round, 10_000, `the event of round ${round}`);
    }
  });

  it('keeps consuming across repeated connection kills', async () => {
    const topic = randomQueue('killed');
    const { log } = await start(topic);
    for (let round = 1; round <= 10; round++) {
      await raw.call('CLIENT', 'KILL', 'USER', user.username);
      await append(raw, topic, { round });
      await eventually(() => log.events.length === round, 10_000, `the event after kill ${round}`);
    }
  });
});
