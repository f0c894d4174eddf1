/**
 * The runner's own tests: malformed scenarios are refused loudly and wrong expectations fail, so
 * a passing conformance file means something.
 */
import { Redis } from 'iovalkey';
import { checkScenario, type Scenario } from './format.js';
import { ConformanceRunner, loadScripts } from './runner.js';
import { PROTOCOL_VERSION } from '../../src/core/scripts.js';

const scripts = loadScripts();
const names = new Set(scripts.keys());
let redis: Redis;
let runner: ConformanceRunner;

beforeAll(() => {
  redis = new Redis(process.env.ECHOMQ_TEST_URL!, { maxRetriesPerRequest: 1 });
  runner = new ConformanceRunner(redis, scripts);
});
afterAll(async () => {
  await redis.quit();
});

const scenario = (steps: unknown[]): Scenario => checkScenario({ name: 'self', steps }, 'self', names);
const run = (steps: unknown[]) => runner.run('self.json', scenario(steps));
const enqueue = (id: string) => ({
  call: 'enqueue',
  keys: ['@meta', '@pending', '@scheduled', '@wake', '@data', '@opts', '@events'],
  argv: [PROTOCOL_VERSION, 1024, 1, '', id, '{}', 0, 0, '', ''],
});

describe('the format refuses typos', () => {
  test.each([
    [[{ cal: 'enqueue' }], /exactly one of/],
    [[{ call: 'enqueue', keys: [], argv: [], expct: [1] }], /unknown key "expct"/],
    [[{ call: 'no-such-script' }], /no script lua\/no-such-script\.lua/],
    [[{ command: ['GET', 'k'], expect: { $regex: 'x' } }], /unknown key "\$regex"/],
    [[{ command: ['GET', 'k'], expect: true }], /not a matcher/],
    [[{ command: ['GET', 'k'], expect: 1.5 }], /not a safe integer/],
    [[{ keys_state: { '@meta': { type: 'hash', feilds: {} } } }], /unknown key "feilds"/],
    [[{ keys_state: { '@meta': { type: 'map' } } }], /unknown key type/],
    [[{ call: 'claim', keys: [], argv: [], error: 'WRONGTYPE' }], /must be an EMQ_<CODE>/],
    [[{ repeat: 2, steps: [{ sleep: 'x' }] }], /sleep must be/],
  ])('%j', (steps, why) => {
    expect(() => scenario(steps)).toThrow(why);
  });
});

describe('wrong expectations fail with the step and the difference', () => {
  test('an integer matcher does not match a bulk string', async () => {
    await expect(run([{ command: ['SET', 'emq:{$Q}:k', '1'] }, { command: ['GET', 'emq:{$Q}:k'], expect: 1 }])).rejects.toThrow(
      /step 1 \(command GET\).*not this integer reply/s,
    );
  });
  test('an error code matches as a whole word only', async () => {
    await expect(run([{ ...enqueue('nope'), error: 'EMQ_BAD' }])).rejects.toThrow(/actual error reply "EMQ_BAD_ID/);
  });
  test('a reply where an error was expected fails', async () => {
    await expect(run([{ ...enqueue('$job_a'), error: 'EMQ_BAD_ID' }])).rejects.toThrow(/expected error EMQ_BAD_ID, actual reply \[1\]/);
  });
  test('unchanged names the key that changed', async () => {
    await expect(run([enqueue('$job_a'), { snapshot: 's' }, enqueue('$job_b'), { unchanged: 's' }])).rejects.toThrow(
      /step 3 \(unchanged\).*changed emq:\{cq[0-9a-f]+\}:data/s,
    );
  });
  test('a key state with a missing member, a wrong type or an extra hash field fails', async () => {
    await expect(run([enqueue('$job_a'), { keys_state: { '@pending': { type: 'list', value: ['$job_b'] } } }])).rejects.toThrow(/different bytes/);
    await expect(run([enqueue('$job_a'), { keys_state: { '@pending': { type: 'set' } } }])).rejects.toThrow(/wrong key type/);
    await expect(run([enqueue('$job_a'), { keys_state: { '@meta': { type: 'hash', exact: {} } } }])).rejects.toThrow(/unexpected fields v/);
  });
  test('an unbound variable and an unknown key reference fail loudly', async () => {
    await expect(run([{ command: ['GET', '$nobody'] }])).rejects.toThrow(/unknown variable \$nobody/);
    await expect(run([{ command: ['GET', '@pendng'] }])).rejects.toThrow(/unknown key reference @pendng/);
  });
  test('repeat reports the iteration that failed', async () => {
    await expect(run([{ repeat: 3, steps: [{ command: ['INCR', 'emq:{$Q}:n'], expect: { $int: [1, 2] } }] }])).rejects.toThrow(
      /step 0\.\(iteration 3\)\.0/,
    );
  });
});
