/**
 * Flows (docs/flows.md): the flow plan, `FlowService` that writes a tree of parents and children,
 * and the `FlowRelay` that delivers children's outcomes to their parents from the outbox. The rest
 * of src/ imports this folder through this file only.
 */
export { encodeFlow } from './flow-plan.js';
export { FlowRelay } from './flow-relay.js';
export type { FlowRelayOptions } from './flow-relay.js';
export { FlowService } from './flow-service.js';
export type { FlowOptions } from './flow-service.js';
export type { FlowTreeNode, GetFlowOptions } from './flow-tree.js';
export { DEFAULT_FLOW_BOUNDS } from './flow-types.js';
export type { ChildResult, FlowBounds, FlowChildren, FlowJob, FlowNode, FlowSpec } from './flow-types.js';
