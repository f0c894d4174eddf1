/**
 * The rows of `bench/ab.ts`: which phase of a build's own bench each row runs, at what size, and
 * how (a warm-up run as long as the timed one, then the timed one, on a fresh driver and probe).
 */

/** The bench modules of one build, loaded from its compiled bench folder. */
export interface AbBuild {
  readonly phases: Record<string, unknown>;
  readonly bus: Record<string, unknown>;
  readonly drivers: Record<string, unknown>;
  readonly probe: Record<string, unknown>;
}

/** The rows `bench:ab` can run. */
export const AB_ROWS = ['single', 'batch', 'c1', 'c1p0', 'c10', 'c50', 'c200', 'c50p', 'c50g', 'x2', 'lat', 'lat5k', 'bpub', 'bg1', 'bg1ra', 'bg50', 'blat'] as const;

/** One row name. */
export type RowName = (typeof AB_ROWS)[number];

type Phase = (ctx: unknown, ...args: (string | number | object)[]) => Promise<{ values: Record<string, number> }>;
interface Closable {
  close?(): Promise<void>;
}

/** Each row: the module and function of the phase, and its arguments after the context. */
const ROWS: Record<RowName, readonly [module: 'phases' | 'bus', fn: string, args: readonly (string | number | object)[]]> = {
  single: ['phases', 'enqueueSingle', [20_000]],
  batch: ['phases', 'enqueueBatch', [50_000]],
  c1: ['phases', 'processLocal', ['process_c1_per_s', 1, 5000]],
  c1p0: ['phases', 'processLocal', ['process_c1_prefetch0_per_s', 1, 5000, {}, { prefetch: 0 }]],
  c10: ['phases', 'processLocal', ['process_c10_per_s', 10, 20_000]],
  c50: ['phases', 'processLocal', ['process_c50_per_s', 50, 30_000]],
  c200: ['phases', 'processLocal', ['process_c200_per_s', 200, 30_000]],
  c50p: ['phases', 'processLocal', ['process_c50_prio_per_s', 50, 30_000, { priorities: 10 }]],
  c50g: ['phases', 'processLocal', ['process_c50_groups_per_s', 50, 30_000, { groups: 100 }]],
  x2: ['phases', 'processChildren', ['process_2x50_per_s', 2, 50, 30_000]],
  lat: ['phases', 'latency', [500, 3, 10]],
  lat5k: ['phases', 'latency', [5000, 3, 10, 'latency_5k']],
  bpub: ['bus', 'busPublishSingle', [20_000]],
  bg1: ['bus', 'busGroup', ['bus_group_c1_per_s', 1, 5000]],
  bg1ra: ['bus', 'busGroupReadAhead', [20_000]],
  bg50: ['bus', 'busGroup', ['bus_group_c50_per_s', 50, 30_000]],
  blat: ['bus', 'busLatency', [500, 3, 10]],
};

/** The job count's position in each row's arguments (scaled by `--scale`); rows without one are absent. */
const COUNT_AT: Partial<Record<RowName, number>> = { single: 0, batch: 0, c1: 2, c1p0: 2, c10: 2, c50: 2, c200: 2, c50p: 2, c50g: 2, x2: 3, bpub: 0, bg1: 2, bg1ra: 0, bg50: 2 };

/**
 * Runs `row` of `build` against the Valkey at `url`: a warm-up run, then the timed run's values.
 * `scale` multiplies the row's job count (both runs), for a longer steady state.
 */
export async function runRow(build: AbBuild, row: RowName, url: string, scale = 1): Promise<Record<string, number>> {
  const [mod, fn, rowArgs] = ROWS[row];
  const at = COUNT_AT[row];
  const args = rowArgs.map((a, i) => (i === at && typeof a === 'number' ? Math.round(a * scale) : a));
  const phase = build[mod][fn] as Phase | undefined;
  if (!phase) throw new Error(`this build's bench has no ${fn}`);
  const makeDriver = build.drivers.makeDriver as (name: string, url: string) => Closable;
  const Probe = build.probe.Probe as new (url: string) => Closable;
  const driver = makeDriver('echomq', url);
  const probe = new Probe(url);
  try {
    await phase({ driver, probe, url }, ...args);
    return (await phase({ driver, probe, url }, ...args)).values;
  } finally {
    await driver.close?.();
    await probe.close?.();
  }
}
