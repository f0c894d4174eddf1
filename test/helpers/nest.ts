import type { INestApplication, LoggerService, ModuleMetadata, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';

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

/** Compiles a testing module of `imports` and `providers`, logging to `logs` (or nowhere), and inits the app. */
export async function startApp(imports: ModuleMetadata['imports'], providers: Provider[] = [], logs?: CapturedLogs): Promise<INestApplication> {
  const builder = Test.createTestingModule({ imports, providers });
  if (logs) builder.setLogger(logs);
  const app = (await builder.compile()).createNestApplication({ logger: logs ?? false });
  await app.init();
  return app;
}
