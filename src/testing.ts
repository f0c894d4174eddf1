/**
 * `@echomq/nestjs/testing`: throwaway Valkey servers for tests — one embedded `valkey-server`,
 * or a real local multi-node Valkey Cluster with the topology helpers to place names on it — and
 * the helpers for an application's own tests (`EchoMqTestingModule`, `createTestJob`; docs/testing.md).
 *
 * @module @echomq/nestjs/testing
 */
export { startEmbeddedValkey, freePort } from './core/embedded-valkey.js';
export type { EmbeddedValkey, EmbeddedValkeyOptions } from './core/embedded-valkey.js';
export { startValkeyCluster } from './testing/valkey-cluster.js';
export type { ValkeyCluster, ValkeyClusterOptions, ClusterNode, NodeRef } from './testing/valkey-cluster.js';
export { namesOnDistinctOwners, slotOfName, parseClusterNodes } from './testing/valkey-cluster-topology.js';
export type { ClusterNodeView } from './testing/valkey-cluster-topology.js';
export { createTestJob, createTestFlowJob } from './testing/create-test-job.js';
export type { TestJob, TestJobOverrides, TestFlowJob, TestFlowJobOptions, TestChild, TestFanOut, TestJobWrites } from './testing/create-test-job.js';
export { EchoMqTestingModule, TestValkey } from './testing/testing-module.js';
export type { EchoMqTestingOptions } from './testing/testing-module.js';
export { uniqueQueueName } from './testing/unique-name.js';
