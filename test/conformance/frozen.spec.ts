/**
 * Frozen conformance (docs/protocol.md §12): the scenarios of every older version
 * (`conformance/v<N>/`) are refused with EMQ_VERSION by the current bytes and write nothing, and
 * no scenario recorded in `conformance/frozen.json` for the current version has changed.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'iovalkey';
import { PROTOCOL_VERSION } from '../../src/protocol.js';
import { conformanceDir, currentScenarios, readFrozen } from '../../scripts/conformance-freeze.js';
import { asRefused } from './frozen.js';
import { ConformanceRunner, loadFiles, loadScripts } from './runner.js';

const url = process.env.ECHOMQ_TEST_URL;
if (!url) throw new Error('ECHOMQ_TEST_URL is not set: run through scripts/with-valkey (npm test does)');

const scripts = loadScripts();
const older = readdirSync(conformanceDir())
  .filter((d) => /^v\d+$/.test(d) && Number(d.slice(1)) < Number(PROTOCOL_VERSION))
  .sort();
let redis: Redis;
let runner: ConformanceRunner;
beforeAll(() => {
  redis = new Redis(url, { maxRetriesPerRequest: 1, enableAutoPipelining: false });
  runner = new ConformanceRunner(redis, scripts);
});
afterAll(async () => {
  await redis.quit();
});

describe(`the scenarios of protocol ${PROTOCOL_VERSION}`, () => {
  it('are as recorded in conformance/frozen.json (a recorded scenario never changes within its version)', () => {
    const recorded = readFrozen()[PROTOCOL_VERSION] ?? {};
    const now = currentScenarios();
    const changed = Object.entries(recorded).filter(([key, hash]) => now.get(key) !== hash).map(([key]) => key);
    expect(changed).toEqual([]);
    expect(Object.keys(recorded).length).toBeGreaterThan(0);
  });
});

for (const dir of older) {
  const path = join(conformanceDir(), dir);
  const files = existsSync(path) ? readdirSync(path).filter((f) => f.endsWith('.json')).sort() : [];
  describe(`the frozen scenarios of protocol ${dir} (every call refused: EMQ_VERSION, nothing written)`, () => {
    it('exist', () => expect(files.length).toBeGreaterThan(0));
    for (const f of loadFiles(scripts, files, path)) {
      for (const s of f.scenarios) {
        it(`${f.file} › ${s.name}`, async () => {
          if (f.error || s.error || !s.scenario) throw new Error(f.error ?? s.error);
          await runner.run(f.file, asRefused(s.scenario, dir.slice(1)));
        });
      }
    }
  });
}
