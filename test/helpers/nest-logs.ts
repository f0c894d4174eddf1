import type { LoggerService } from '@nestjs/common';

/** A Nest logger that keeps every line (level and message) for assertions. */
export class CapturedLogs implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];

  /** The messages of one level that contain `text`. */
  find(level: string, text: string): string[] {
    return this.lines.filter((l) => l.level === level && l.message.includes(text)).map((l) => l.message);
  }

  log(message: unknown): void {
    this.lines.push({ level: 'log', message: String(message) });
  }
  warn(message: unknown): void {
    this.lines.push({ level: 'warn', message: String(message) });
  }
  error(message: unknown): void {
    this.lines.push({ level: 'error', message: String(message) });
  }
  debug(): void {}
  verbose(): void {}
}
