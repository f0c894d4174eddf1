/**
 * `@echomq/nestjs/testing`: throwaway Valkey servers for tests — one embedded `valkey-server`,
 * or a real local multi-node Valkey Cluster with the topology helpers to place names on it — and
 * the helpers for an application's own tests (`EchoMqTestingModule`, `createTestJob`; docs/testing.md).
 *
 * @module @echomq/nestjs/testing
 */
export { startEmbeddedValkey, freePort } from './embedded-valkey.js';
export type { EmbeddedValkey, EmbeddedValkeyOptions } from './embedded-valkey.js';
export { startValkeyCluster } from './valkey-cluster.js';
export type { ValkeyCluster, ValkeyClusterOptions, ClusterNode, NodeRef } from './valkey-cluster.js';
export { namesOnDistinctOwners, slotOfName, parseClusterNodes } from './valkey-cluster.topology.js';
export type { ClusterNodeView } from './valkey-cluster.topology.js';
export { createTestJob, createTestFlowJob } from './create-test-job.js';
export type { TestJob, TestJobOverrides, TestFlowJob, TestFlowJobOptions, TestChild, TestFanOut, TestJobWrites } from './create-test-job.js';
export { EchoMqTestingModule, TestValkey } from './testing.module.js';
export type { EchoMqTestingOptions } from './testing.module.js';
export { uniqueQueueName } from './unique-name.js';
