/** The flows section of `docs/benchmarks.md`. */
import { flowsTable, type FlowsReport } from './flows.js';

/** Renders the flows rows with what they measure and the trade-offs behind them. */
export function flowsSection(r: FlowsReport): string {
  const reps = r.reps > 1 ? `the median of ${r.reps} runs per system, alternating which goes first` : 'one run per system';
  return `## Flows: EchoMQ vs BullMQ FlowProducer

Flows of 1 parent + ${r.children} children, the children in another queue than the parent: ${r.flows} flows
with ${r.inFlight} being created at once (saturated), then ${r.paced} flows at a paced ${r.pace} flows/s (latency
away from saturation); ${reps}, each after an untimed warm-up of the same size. Children run at
concurrency 50, parents at 20; handlers are no-ops. Fan-in latency: the last child's handler
returning → the parent's handler starting. *Machine stalls p99*: over each paced run, an idle
child process measured how late its 1 ms timer fired (bench/stall-probe.ts) — what the machine
alone costs any process (other processes, vCPU steal); *other cores*: the CPU other processes
used meanwhile (bench/load.ts). A fan-in p99 near the stall p99 is the machine's floor.

${flowsTable(r)}

- **What differs on the wire.** BullMQ needs a flow's queues on one hash tag (one slot) and releases
  the parent in the same script that finishes its last child. EchoMQ queues of one flow may live on
  different cluster nodes, so the hand-off goes through the child queue's outbox and is relayed: the
  child's completion writes it and, in a relaying process, gets it back already leased (the
  self-relay lease), so the process delivers it to the parent's queue at once (one more script call)
  and acknowledges it in the background — one round trip BullMQ does not make, the floor of EchoMQ's
  light-load fan-in latency (docs/flows.md).
- **Where EchoMQ gains.** Flow creation is one script call per queue of the flow (the creator
  relays its own creations: the children of the flows created in one turn in one call per child
  queue); the hand-offs of a completion batch reach each parent queue in one flow-deliver call;
  the parent's children results live in its row.
`;
}
