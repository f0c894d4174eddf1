import { BusAdmin, BusService } from '../../src/index.js';
import { PROTOCOL_VERSION, runScript, topicKeys } from '../../src/protocol.js';
import { DEFAULT_ARCHIVE_MAX_AGE_MS, DEFAULT_ARCHIVE_MAX_BYTES } from '../../src/bus/retention-policy.js';
import { queueKeysIn, randomQueue, testUrl } from '../helpers/valkey.js';
import { aclUser } from '../helpers/acl.js';
import { validateModuleOptions } from '../../src/nest/echomq-validation.js';
import { EchoMqConnection } from '../../src/protocol.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { busFixture, codeOf, collect } from './bus-core.helpers.js';

const made: string[] = [];
// Registered before the fixture's own hook, so that it runs while the fixture's client is open.
afterAll(async () => {
  for (const t of made) {
    const keys = await queueKeysIn(f.raw, t);
    if (keys.length) await f.raw.del(...keys);
  }
});
const f = busFixture();

/** A fresh topic name, deleted after the file. */
function topic(): string {
  const t = randomQueue('rb');
  made.push(t);
  return t;
}

/** A logger that keeps what it is told. */
function captured(): { warn: (m: string) => void; error: (m: string) => void; lines: string[] } {
  const lines: string[] = [];
  return { warn: (m) => lines.push(m), error: (m) => lines.push(m), lines };
}

/** The sum of the archive's segment lengths, read key by key. */
async function archiveLength(t: string): Promise<{ bytes: number; largest: number }> {
  const k = topicKeys(t);
  let bytes = 0;
  let largest = 0;
  for (const m of await f.raw.zrange(k.archive, 0, -1)) {
    const n = await f.raw.strlen(k.segPrefix + m);
    bytes += n;
    largest = Math.max(largest, n);
  }
  return { bytes, largest };
}

const payload = (i: number): { i: number; pad: string } => ({ i, pad: 'x'.repeat(200) });

describe('the archive byte bound', () => {
  it('keeps the archive within archiveMaxBytes (plus one segment) and the log within maxLen under repeated trims', async () => {
    const t = topic();
    const k = topicKeys(t);
    const bound = 64 * 1024;
    await f.bus.setRetention(t, { maxLen: 500, archiveMaxBytes: bound });
    let expired = 0;
    for (let round = 0; round < 20; round++) {
      await f.bus.publishMany(t, Array.from({ length: 250 }, (_, i) => payload(round * 250 + i)));
      expired += (await f.bus.trim(t)).expiredSegments;
      const { bytes, largest } = await archiveLength(t);
      expect(Number(await f.raw.hget(k.meta, 'archiveBytes'))).toBe(bytes); // the running total is exact
      expect(bytes).toBeLessThanOrEqual(bound + largest);
      expect(await f.raw.xlen(k.log)).toBeLessThanOrEqual(500);
    }
    // 5000 entries of ~230 bytes went through: far more than the bound, so segments were expired.
    expect(expired).toBeGreaterThan(0);
    const { bytes } = await archiveLength(t);
    expect(bytes).toBeGreaterThan(bound / 2);
    // A replay reads what is kept, oldest first, without gaps after the oldest kept entry.
    const seen = (await collect(f.bus.replay<{ i: number }>(t))).map((e) => e.payload.i);
    expect(seen[seen.length - 1]).toBe(4999);
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, n) => seen[0] + n));
  });

  it('archive: false (or archiveMaxBytes: 0) deletes trimmed entries and drops the archive kept so far', async () => {
    const t = topic();
    const k = topicKeys(t);
    await f.bus.setRetention(t, { maxLen: 10 });
    await f.bus.publishMany(t, Array.from({ length: 30 }, (_, i) => i));
    expect(await f.bus.trim(t)).toEqual({ archived: 20, trimmed: 20, expiredSegments: 0 });
    expect(await f.raw.zcard(k.archive)).toBe(1);

    await f.bus.setRetention(t, { maxLen: 10, archive: false });
    expect(await f.bus.getRetention(t)).toEqual({ maxLen: 10, archiveMaxBytes: 0 });
    await f.bus.publishMany(t, Array.from({ length: 15 }, (_, i) => 100 + i));
    expect(await f.bus.trim(t)).toEqual({ archived: 0, trimmed: 15, expiredSegments: 1 });
    expect(await f.raw.exists(k.archive)).toBe(0);
    expect(await f.raw.hget(k.meta, 'archiveBytes')).toBe('0');
    expect((await collect(f.bus.replay<number>(t))).map((e) => e.payload)).toEqual(Array.from({ length: 10 }, (_, i) => 105 + i));

    await f.bus.setRetention(t, { maxLen: 5, archiveMaxBytes: 0 });
    expect(await f.bus.trim(t)).toEqual({ archived: 0, trimmed: 5, expiredSegments: 0 });
    expect(await f.raw.exists(k.archive)).toBe(0);
  });
});

describe('an archive without a running total (written by earlier bytes)', () => {
  it('is counted 1000 segments per call (more = 1 meanwhile, nothing deleted by bytes), then bounded', async () => {
    const t = topic();
    const k = topicKeys(t);
    const trim = async (limit: number): Promise<number[]> =>
      (await runScript(f.conn.scriptClient, 'trim', [k.meta, k.log, k.archive, k.segPrefix], [PROTOCOL_VERSION, limit, 8388608, 100])) as number[];
    await f.bus.publishMany(t, Array.from({ length: 1000 }, (_, i) => i));
    await f.bus.publishMany(t, Array.from({ length: 3 }, (_, i) => 1000 + i));
    await runScript(f.conn.scriptClient, 'retention', [k.meta], [PROTOCOL_VERSION, 1, '', '']);
    for (let i = 0; i < 1002; i++) await trim(1); // one segment per entry: 1002 segments
    expect(await f.raw.zcard(k.archive)).toBe(1002);
    const { bytes } = await archiveLength(t);
    expect(Number(await f.raw.hget(k.meta, 'archiveBytes'))).toBe(bytes);
    // As if earlier bytes had written them: no total. A byte bound of about half the archive.
    await f.raw.hdel(k.meta, 'archiveBytes');
    await runScript(f.conn.scriptClient, 'retention', [k.meta], [PROTOCOL_VERSION, 1, '', '', Math.floor(bytes / 2)]);
    expect(await trim(1000)).toEqual([0, 0, 0, 1]);
    expect(await f.raw.hget(k.meta, 'archiveScan')).toMatch(/^1000 \d+$/);
    expect(await f.raw.zcard(k.archive)).toBe(1002);
    let expired = 0;
    for (let r = await trim(1000); ; r = await trim(1000)) {
      expired += r[2];
      if (r[2] < 100) break;
    }
    expect(await f.raw.hget(k.meta, 'archiveScan')).toBeNull();
    const after = await archiveLength(t);
    expect(Number(await f.raw.hget(k.meta, 'archiveBytes'))).toBe(after.bytes);
    expect(after.bytes).toBeLessThanOrEqual(Math.floor(bytes / 2));
    expect(expired).toBeGreaterThanOrEqual(500);
    expect(await f.raw.zcard(k.archive)).toBe(1002 - expired);
  });
});

describe('bounds by default', () => {
  it('a policy without archive bounds gets the defaults; unbounded: true opts out with one warning per topic', async () => {
    const log = captured();
    const bus = new BusService(f.conn, { trimIntervalMs: 0 }, undefined, log);
    try {
      const t = topic();
      await bus.setRetention(t, { maxLen: 100 });
      expect(await bus.getRetention(t)).toEqual({ maxLen: 100, archiveMaxAgeMs: DEFAULT_ARCHIVE_MAX_AGE_MS, archiveMaxBytes: DEFAULT_ARCHIVE_MAX_BYTES });
      expect(log.lines).toEqual([]);

      const u = topic();
      await bus.setRetention(u, { maxLen: 100, unbounded: true });
      await bus.setRetention(u, { maxLen: 50, unbounded: true });
      await bus.trim(u);
      expect(await bus.getRetention(u)).toEqual({ maxLen: 50, unbounded: true });
      expect(log.lines).toHaveLength(1);
      expect(log.lines[0]).toContain(`Bus topic "${u}": its archive has no byte bound (kept forever)`);

      const v = topic();
      await bus.setRetention(v, { maxLen: 100, archiveMaxAgeMs: 60_000, archiveMaxBytes: Infinity });
      expect(await bus.getRetention(v)).toEqual({ maxLen: 100, archiveMaxAgeMs: 60_000, unbounded: true });
      expect(log.lines[1]).toContain(`Bus topic "${v}": its archive has no byte bound (bounded by age only (60000 ms))`);
      expect(log.lines).toHaveLength(2);
    } finally {
      await bus.close();
    }
  });

  it('a trim gives a policy written by a four-argument retention call the default archive bounds and warns once', async () => {
    const log = captured();
    const bus = new BusService(f.conn, { trimIntervalMs: 0 }, undefined, log);
    try {
      const t = topic();
      const k = topicKeys(t);
      await bus.publishMany(t, Array.from({ length: 20 }, (_, i) => i));
      // An older runtime or a peer: the four arguments of the earlier bytes still work (additive).
      await runScript(f.conn.scriptClient, 'retention', [k.meta], [PROTOCOL_VERSION, 5, '', '']);
      expect(await f.raw.hget(k.meta, 'archiveMaxBytes')).toBeNull();
      expect(await bus.trim(t)).toEqual({ archived: 15, trimmed: 15, expiredSegments: 0 });
      expect(await bus.getRetention(t)).toEqual({ maxLen: 5, archiveMaxAgeMs: DEFAULT_ARCHIVE_MAX_AGE_MS, archiveMaxBytes: DEFAULT_ARCHIVE_MAX_BYTES });
      await bus.trim(t);
      expect(log.lines).toHaveLength(1);
      expect(log.lines[0]).toContain(`Bus topic "${t}": its retention policy had no archive byte bound; applied the default`);

      // A four-argument call leaves a stored byte bound as it is.
      await runScript(f.conn.scriptClient, 'retention', [k.meta], [PROTOCOL_VERSION, 7, '', '']);
      expect(await bus.getRetention(t)).toEqual({ maxLen: 7, archiveMaxBytes: DEFAULT_ARCHIVE_MAX_BYTES });
    } finally {
      await bus.close();
    }
  });

  it('a topic without any retention is named in one warning, or gets bus.defaultRetention', async () => {
    const log = captured();
    const bus = new BusService(f.conn, { trimIntervalMs: 0 }, undefined, log);
    const withDefault = new BusService(f.conn, { trimIntervalMs: 0, defaultRetention: { maxLen: 3, archive: false } }, undefined, log);
    try {
      const t = topic();
      await bus.publishMany(t, [1, 2, 3, 4]);
      expect(await bus.trim(t)).toEqual({ archived: 0, trimmed: 0, expiredSegments: 0 });
      await bus.trim(t);
      expect(log.lines).toEqual([`Bus topic "${t}" has no retention: its log grows without bound. Set one with bus.setRetention("${t}", { maxLen: 10000 }) (or maxAgeMs), or the module option bus.defaultRetention.`]);

      expect(await withDefault.trim(t)).toEqual({ archived: 0, trimmed: 1, expiredSegments: 0 });
      expect(await withDefault.getRetention(t)).toEqual({ maxLen: 3, archiveMaxBytes: 0 });
      expect(log.lines).toHaveLength(1);
    } finally {
      await Promise.all([bus.close(), withDefault.close()]);
    }
  });

  it('refuses a bad bus.defaultRetention in the module options, naming the key', () => {
    const valid = (bus: object): unknown => validateModuleOptions({ connection: { url: testUrl() }, bus } as never);
    expect(() => valid({ defaultRetention: { maxLen: 5, archive: false } })).not.toThrow();
    expect(() => valid({ defaultRetention: { maxLen: 5, maxLength: 5 } })).toThrow(/bus\.defaultRetention: maxLength/);
    expect(() => valid({ defaultRetention: { archive: false, archiveMaxBytes: 5 } })).toThrow(/takes no other archive bound/);
    expect(() => valid({ defaultRetention: 5 })).toThrow(/bus\.defaultRetention must be an object/);
  });

  it('refuses a bad bus.defaultRetention when the service is built', () => {
    expect(() => new BusService(f.conn, { defaultRetention: { maxLen: 5, archiveMaxByte: 10 } as never })).toThrow(/archiveMaxByte/);
    expect(() => new BusService(f.conn, { defaultRetention: { archiveMaxBytes: -1 } })).toThrow(/archiveMaxBytes must be an integer in 0\.\.1099511627776 or Infinity/);
  });
});

describe('bad retention input', () => {
  it('is EMQ_BAD_OPTION (typed) or EMQ_BAD_ARG (on the wire) and writes nothing', async () => {
    const t = topic();
    const k = topicKeys(t);
    await f.bus.setRetention(t, { maxLen: 10, archiveMaxBytes: 4096 });
    const bad = [
      { archiveMaxBytes: -1 },
      { archiveMaxBytes: 1.5 },
      { archiveMaxBytes: NaN },
      { archiveMaxBytes: 2 ** 40 + 1 },
      { archiveMaxAgeMs: 0 },
      { archive: false, archiveMaxBytes: 10 },
      { archive: false, unbounded: true },
      { archive: false, archiveMaxAgeMs: 1000 },
      { archive: 'no' },
      { unbounded: 1 },
      { maxLen: 5, archiveMaxByte: 10 },
    ];
    for (const p of bad) expect([JSON.stringify(p), await codeOf(() => f.bus.setRetention(t, p as never))]).toEqual([JSON.stringify(p), 'EMQ_BAD_OPTION']);
    const wire = (argv: (string | number)[]) => runScript(f.conn.scriptClient, 'retention', [k.meta], argv);
    for (const argv of [
      [PROTOCOL_VERSION, 5, '', '', ''],
      [PROTOCOL_VERSION, 5, '', '', '-1'],
      [PROTOCOL_VERSION, 5, '', '', 'inf'],
      [PROTOCOL_VERSION, 5, '', '', '1099511627777'],
      [PROTOCOL_VERSION, 5, '', '', 'UNBOUNDED'],
      [PROTOCOL_VERSION, 5, '', '', 10, ''],
    ]) {
      await refusedUnchanged(f.raw, t, 'EMQ_BAD_ARG', () => wire(argv));
    }
    expect(await f.bus.getRetention(t)).toEqual({ maxLen: 10, archiveMaxAgeMs: DEFAULT_ARCHIVE_MAX_AGE_MS, archiveMaxBytes: 4096 });
  });
});

describe('the operator figures', () => {
  it('BusAdmin.topic carries the log bytes (MEMORY USAGE) and the archive segments and bytes', async () => {
    const t = topic();
    const admin = new BusAdmin(f.conn, f.bus);
    await f.bus.setRetention(t, { maxLen: 100 });
    await f.bus.publishMany(t, Array.from({ length: 400 }, (_, i) => payload(i)));
    await f.bus.trim(t);
    const info = await admin.topic(t);
    const { bytes } = await archiveLength(t);
    expect(info).toMatchObject({ name: t, length: 100, archiveSegments: 1, archiveBytes: bytes });
    expect(info.logBytesEstimated).toBeUndefined();
    expect(info.logBytes).toBe(await f.raw.call('MEMORY', 'USAGE', topicKeys(t).log));
    expect(info.logBytes).toBeGreaterThan(100 * 200);
  });

  it('a monitoring user (+@read) reads MEMORY USAGE; one refused it gets an estimate marked as one', async () => {
    const t = topic();
    await f.bus.setRetention(t, { maxLen: 100 });
    await f.bus.publishMany(t, Array.from({ length: 50 }, (_, i) => payload(i)));
    const monitor = ['resetkeys', 'resetchannels', '-@all', '+@read', '-@dangerous', '+info', '+time', '+evalsha', '+eval', '+client|setname', '~{emq}:*', '~emq:*'];
    for (const [rules, estimated] of [[monitor, false], [[...monitor, '-memory'], true]] as const) {
      const u = await aclUser(f.raw, rules, 'emq-mem');
      const url = new URL(testUrl());
      url.username = u.username;
      url.password = u.password;
      const conn = new EchoMqConnection({ url: url.toString() });
      try {
        const info = await new BusAdmin(conn, new BusService(conn, { trimIntervalMs: 0 })).topic(t);
        expect([info.logBytesEstimated ?? false, info.length]).toEqual([estimated, 50]);
        // An estimate from the entries' sizes is of the right order: at least their payload bytes.
        expect(info.logBytes).toBeGreaterThan(50 * 200);
      } finally {
        await conn.close();
        await u.drop();
      }
    }
  });
});
