/**
 * Where a long-running loop (a job consumer, a Bus group, a flow relay, a cache follower) reports
 * what it cannot throw to anyone. Nest's `Logger` fits; so does `console`.
 */
export interface ConsumerLogger {
  /** Something went wrong and was absorbed (a retry follows, a loss was reported). */
  warn(message: string): void;
  /** Something needs an operator; `err` is the cause, when there is one. */
  error(message: string, err?: unknown): void;
}
