/**
 * Frozen conformance (docs/protocol.md §12). The scenarios of an older protocol version stay in
 * `conformance/v<N>/`; against the current bytes every script call in them must be refused with
 * `EMQ_VERSION` and write nothing. `asRefused` turns such a scenario into that check: one
 * snapshot, each call (repeats once) expecting EMQ_VERSION, nothing changed. Values an earlier
 * reply would have bound (`$token` …) become `"0"`: a refusal by version reads no argument.
 * The scenarios of the current version are recorded in `conformance/frozen.json` (a hash per
 * scenario) as they become part of it; a recorded scenario must not change.
 */
import type { Scenario, Step } from './format.js';

const KNOWN = /^(Q|T|NS|job_\w+|evt_\w+|ver_\w+)$/;

/** A string with every variable the runner would not know in a refused-only run replaced by "0". */
const unbind = (s: string | number): string | number =>
  typeof s === 'string' ? s.replace(/\$([A-Za-z_][A-Za-z0-9_]*)/g, (m: string, name: string) => (KNOWN.test(name) ? m : '0')) : s;

/** The calls of a step list, in order, nested repeats flattened (once each). */
function calls(steps: readonly Step[], version: string): Step[] {
  const out: Step[] = [];
  for (const s of steps) {
    // Only a caller of that version's calls: one sending another version on purpose (a v1
    // scenario testing the fence with "2") says nothing about the bump.
    if ('call' in s && String(s.argv[0]) === version) out.push({ call: s.call, keys: s.keys.map((k) => unbind(k) as string), argv: s.argv.map(unbind), error: 'EMQ_VERSION' });
    else if ('repeat' in s) out.push(...calls(s.steps, version));
  }
  return out;
}

/** The scenario of an older `version` as the refusal check above (its calls with ARGV[1] = version). */
export function asRefused(s: Scenario, version: string): Scenario {
  return { ...s, steps: [{ snapshot: 'frozen' }, ...calls(s.steps, version), { unchanged: 'frozen' }] } as Scenario;
}
