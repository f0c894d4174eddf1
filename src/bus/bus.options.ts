/** Options of the Bus, under `EchoMqModuleOptions.bus`. */
export interface BusOptions {
  /** Stable instance name of this process, part of its consumer names. Default `ECHOMQ_INSTANCE` or "0". */
  readonly instance?: string;
  /** Largest event payload (JSON bytes). Default 512 KiB. */
  readonly maxPayloadBytes?: number;
  /** Dead-letter log cap per topic. Default 10,000. */
  readonly deadCap?: number;
}
