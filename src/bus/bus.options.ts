/** Options of the Bus, under `EchoMqModuleOptions.bus`. */
export interface BusOptions {
  /** Stable instance name of this process, part of its consumer names. Default `ECHOMQ_INSTANCE` or "0". */
  readonly instance?: string;
  /** Largest event payload (JSON bytes). Default 512 KiB. */
  readonly maxPayloadBytes?: number;
  /** Dead-letter log cap per topic. Default 10,000. */
  readonly deadCap?: number;
}

/** Options of the Bus core (publish, retention), merged into `BusOptions`. */
export interface BusOptions {
  /** Trim each topic published to at most this often (ms); 0 turns automatic trimming off. Default 5000. */
  readonly trimIntervalMs?: number;
}
