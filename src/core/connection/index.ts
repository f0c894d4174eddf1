/**
 * The connection (docs/deployment.md): `EchoMqConnection` with its command, blocking and
 * subscriber clients, the boot retry, the eviction-policy check and the node lease ids are minted
 * under. The rest of src/ imports this folder through this file only.
 */
export { openAtBoot, resolveBootRetry } from './boot-retry.js';
export type { ResolvedBootRetry } from './boot-retry.js';
export type { ClientRole } from './client-setup.js';
export { connectClient, createClient, resolveEvictionCheckMs } from './client.js';
export type { ValkeyClient } from './client.js';
export type { BootRetryOptions, ValkeyConnectionOptions } from './connection-options.js';
export { EchoMqConnection } from './connection.js';
export type { ConnectionLogger, EvictionPolicyListener, EvictionPolicyState } from './eviction-policy.js';
export { NodeLease } from './node-lease.js';
export { ECHOMQ_VERSION, MAX_PROCESS_INFO_BYTES, ProcessDescription } from './process-description.js';
export type { ProcessGroup, ProcessInfo, ProcessPart, ProcessQueue } from './process-description.js';
export type { LeaseClient, NodeLeaseOptions } from './node-lease.js';
