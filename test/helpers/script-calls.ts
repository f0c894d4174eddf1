import type { Redis } from 'iovalkey';

/** Script calls the server has run so far (EVALSHA and EVAL), from `INFO commandstats`. */
export async function scriptCalls(raw: Redis): Promise<number> {
  const info = await raw.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)) n += Number(m[1]);
  return n;
}
