import type { PayloadCodec } from '../core/codec.js';
import type { RetentionPolicy } from './bus-types.js';

/** Options of the Bus, under `EchoMqModuleOptions.bus`. */
export interface BusOptions {
  /**
   * Stable instance name of this process, part of its consumer names (`<hostname>-<instance>`);
   * it must be unique among the live processes of a host. Default `ECHOMQ_INSTANCE`; when neither
   * is set, every member gets a unique name (`<hostname>-<pid>-<random>`).
   */
  readonly instance?: string;
  /** Largest event payload (JSON bytes). Default 512 KiB. */
  readonly maxPayloadBytes?: number;
  /** Dead-letter log cap per topic. Default 10,000. */
  readonly deadCap?: number;
  /**
   * `strict` (default): an event payload value JSON would silently change (a `Date`, `NaN`, a
   * `Map`, a class instance, …) is refused naming its path; `json`: JSON's conversions are
   * accepted (docs/queue.md, "Payloads").
   */
  readonly codec?: PayloadCodec;
}

// Options of the Bus core (publish, retention), merged into `BusOptions`.
export interface BusOptions {
  /** Trim each topic published to at most this often (ms); 0 turns automatic trimming off. Default 5000. */
  readonly trimIntervalMs?: number;
  /**
   * The retention a topic gets when a trim finds it has none (no `maxLen`, `maxAgeMs` or archive
   * bound stored): set once, as `BusService.setRetention` would. Absent: such a topic is trimmed
   * by nothing and a warning names it once (docs/bus.md, "Bounds by default").
   */
  readonly defaultRetention?: RetentionPolicy;
}
