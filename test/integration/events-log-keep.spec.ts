import { BUILTIN_DEFAULTS } from '../../src/queue/queue-options.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { queueKeys } from '../../src/protocol.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue } from '../helpers/valkey.js';

// Issue 39: a process that configures no lifecycle log never turns off the log another process
// set (an enqueue used to record its own length, 0, and so switched the log off fleet-wide).
const f = queueFixture();

describe("an enqueue keeps another process's lifecycle log", () => {
  it('a process without a log keeps it; one that sets 0 for this queue turns it off', async () => {
    const q = randomQueue('elog-keep');
    const meta = queueKeys(q).meta;
    const logging = new QueueService(f.conn, BUILTIN_DEFAULTS, { [q]: { eventsLog: 100 } });
    expect(await logging.applyEventsLog(q)).toBe(true);
    expect(await f.raw.hget(meta, 'elog')).toBe('100');

    await f.queues.enqueue(q, { n: 1 }); // a process with the built-in default (no log)
    await f.queues.enqueue(q, { n: 2 }, { key: 'k-1' }); // the keyed form too
    expect(await f.raw.hget(meta, 'elog')).toBe('100');
    expect(await f.raw.xlen(queueKeys(q).events)).toBeGreaterThanOrEqual(2); // both enqueues logged

    const longer = new QueueService(f.conn, { ...BUILTIN_DEFAULTS, eventsLog: 500 });
    await longer.enqueue(q, { n: 3 }); // a process configuring a log records its length
    expect(await f.raw.hget(meta, 'elog')).toBe('500');

    const off = new QueueService(f.conn, BUILTIN_DEFAULTS, { [q]: { eventsLog: 0 } });
    await off.enqueue(q, { n: 4 }); // 0 set for this very queue: the log is turned off
    expect(await f.raw.hget(meta, 'elog')).toBe('0');
    await f.raw.del(...Object.values(queueKeys(q)).filter((k) => typeof k === 'string' && !k.endsWith(':')));
  });
});
