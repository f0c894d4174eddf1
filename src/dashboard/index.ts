/**
 * The web dashboard (docs/dashboard.md): re-exported by the main entry point.
 *
 * @module
 */
export { EchoMqDashboardModule, DashboardRuntime } from './dashboard.module.js';
export type { EchoMqDashboardOptions } from './dashboard.options.js';
export type { ThroughputOptions, ThroughputSeries } from './throughput.sampler.js';
export { startStandaloneDashboard } from './standalone.server.js';
export type { StandaloneDashboardOptions, StandaloneDashboard } from './standalone.server.js';
export { escapeHtml } from './html.js';
