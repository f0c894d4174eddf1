/** The shared set-up of the coordination specs. */
import type { Redis } from 'iovalkey';
import type { EchoMqConnection } from '../../src/core/connection/index.js';
import { CoordKeys } from '../../src/core/keys.js';
import { CoordinationService } from '../../src/index.js';
import { openConnection, randomQueue, rawClient } from './valkey.js';

/** A connection, a raw client, services and random names of one spec file. */
export interface CoordinationFixture {
  readonly conn: EchoMqConnection;
  readonly raw: Redis;
  /** A service on the connection (with `owner` when given), closed after the file. */
  service(owner?: string): CoordinationService;
  /** A random name whose lease, semaphore and test fence keys are deleted after the file. */
  name(): string;
}

/** Opens the fixture in `beforeAll`; closes every service and deletes every name's keys in `afterAll`. */
export function coordinationFixture(): CoordinationFixture {
  const services: CoordinationService[] = [];
  const names: string[] = [];
  let conn: EchoMqConnection | undefined;
  let raw: Redis | undefined;
  beforeAll(async () => {
    conn = await openConnection();
    raw = rawClient();
  });
  afterAll(async () => {
    await Promise.all(services.map((s) => s.close()));
    const keys = names.flatMap((n) => {
      const k = new CoordKeys(n);
      return [k.lease, k.sem, `emq:{co:${n}}:fence`];
    });
    if (keys.length) await raw?.del(...keys);
    raw?.disconnect();
    await conn?.close();
  });
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('coordinationFixture: used before beforeAll');
    return v;
  };
  return {
    get conn() {
      return ready(conn);
    },
    get raw() {
      return ready(raw);
    },
    service: (owner) => {
      const s = new CoordinationService(ready(conn), owner ? { owner } : undefined);
      services.push(s);
      return s;
    },
    name: () => {
      const n = randomQueue('co');
      names.push(n);
      return n;
    },
  };
}
