/**
 * Cache coherence (docs/cache.md): the per-namespace invalidation log and the versions and
 * tombstones that keep every instance's L1 copy from outliving an invalidation. The rest of src/
 * imports this folder through this file only.
 */
export { Coherence } from './coherence.js';
export type { L1Target } from './coherence.js';
