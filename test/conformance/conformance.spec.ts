/**
 * The conformance suite: one jest test per scenario of `conformance/scenarios/*.json`, run by the
 * black-box runner (runner.ts, whose header says how to select files with ECHOMQ_CONFORMANCE).
 * A malformed file or scenario is a failing test, never a skipped one.
 */
import { Redis } from 'iovalkey';
import { ConformanceRunner, loadFiles, loadScripts } from './runner.js';

const url = process.env.ECHOMQ_TEST_URL;
if (!url) throw new Error('ECHOMQ_TEST_URL is not set: run through scripts/with-valkey (npm test does)');

const scripts = loadScripts();
const files = loadFiles(scripts);
let redis: Redis;
let runner: ConformanceRunner;

beforeAll(() => {
  redis = new Redis(url, { maxRetriesPerRequest: 1, enableAutoPipelining: false });
  runner = new ConformanceRunner(redis, scripts);
});
afterAll(async () => {
  await redis.quit();
});

test('at least one scenario file is selected', () => {
  expect(files.length).toBeGreaterThan(0);
});

for (const f of files) {
  describe(f.file, () => {
    if (f.error) {
      test('loads', () => {
        throw new Error(f.error);
      });
      return;
    }
    for (const s of f.scenarios) {
      test(s.name, async () => {
        if (s.error || !s.scenario) throw new Error(`${f.file} › "${s.name}" is malformed: ${s.error}`);
        await runner.run(f.file, s.scenario);
      });
    }
  });
}
