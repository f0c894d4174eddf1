/**
 * Coordination (docs/coordination.md): fenced leases, counting semaphores and leader election on
 * one Valkey, over `lease.lua` and `semaphore.lua`. A surface beside queue, bus and cache: it
 * imports only the core. The rest of src/ imports this folder through this file only.
 */
export { CoordinationService } from './coordination-service.js';
export type { CoordinationOptions, Election, ElectionOptions, LeaderTerm, Lease, LeaseOptions, LeaseState, Permit, SemaphoreOptions } from './coordination-types.js';
