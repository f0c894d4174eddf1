import { Logger, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type { ValkeyConnectionOptions } from '../core/connection/index.js';
import { EchoMqModule } from '../nest/echomq-module.js';
import type { EchoMqModuleOptions } from '../nest/echomq-options.js';
import { startEmbeddedValkey, type EmbeddedValkey, type EmbeddedValkeyOptions } from '../core/embedded-valkey.js';

/** Options of `EchoMqTestingModule.forRoot`: the module's options, and where Valkey comes from. */
export interface EchoMqTestingOptions extends Omit<EchoMqModuleOptions, 'connection'> {
  /** Use this Valkey instead of starting one (it is then neither started nor stopped here). */
  readonly connection?: ValkeyConnectionOptions;
  /** Options of the embedded `valkey-server` (extra arguments, the binary). */
  readonly valkey?: EmbeddedValkeyOptions;
}

/**
 * The Valkey of one `EchoMqTestingModule`: started when the module's options are resolved (at
 * `compile()`), stopped by pid when the application (or testing module) closes, after EchoMQ's
 * own connections have closed. Inject it to reach the server (`url`, `port`, `pid`).
 */
export class TestValkey {
  private server?: EmbeddedValkey;
  private starting?: Promise<EmbeddedValkey>;
  private readonly killOnExit = () => {
    try {
      if (this.server) process.kill(this.server.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };

  constructor(private readonly options: EmbeddedValkeyOptions = {}) {}

  /** The running server (throws before the module compiled, or after it closed). */
  get current(): EmbeddedValkey {
    if (!this.server) throw new Error('EchoMqTestingModule: no embedded Valkey is running (compile the module first)');
    return this.server;
  }

  /** `redis://127.0.0.1:<port>`. */
  get url(): string {
    return this.current.url;
  }

  /** The server's port on 127.0.0.1. */
  get port(): number {
    return this.current.port;
  }

  /** The `valkey-server` process id. */
  get pid(): number {
    return this.current.pid;
  }

  /** Starts the server once (a module compiled again after it closed starts a fresh one). */
  async start(): Promise<EmbeddedValkey> {
    this.starting ??= startEmbeddedValkey(this.options).then((s) => {
      this.server = s;
      // A test process that exits without closing the app leaves no server behind.
      process.once('exit', this.killOnExit);
      return s;
    });
    return this.starting;
  }

  /** Stops the server by pid and removes its folder; a no-op when none runs. */
  async stop(): Promise<void> {
    const s = this.server ?? (await this.starting?.catch(() => undefined));
    this.server = undefined;
    this.starting = undefined;
    process.removeListener('exit', this.killOnExit);
    await s?.stop();
  }
}

/**
 * EchoMQ for tests: `EchoMqModule` on a throwaway `valkey-server` of its own, started at
 * `compile()` and stopped (by pid, no process left) when the app or testing module closes, after
 * EchoMQ's connections have closed. Every `forRoot()` gets its own server, so test files never
 * share keys; tests of one file that share a server use `uniqueQueueName()`, since the key
 * grammar has no prefix. Give `connection` to run on a server of your own. See docs/testing.md.
 */
@Module({})
export class EchoMqTestingModule implements OnApplicationShutdown {
  constructor(private readonly valkey: TestValkey) {}

  /** EchoMQ with these options (every `EchoMqModule` option), on a server of its own. */
  static forRoot(options: EchoMqTestingOptions = {}): DynamicModule {
    const { valkey: serverOptions, connection, ...rest } = options;
    const valkey = new TestValkey(serverOptions);
    const echomq = EchoMqModule.forRootAsync({
      useFactory: async (): Promise<EchoMqModuleOptions> => ({ ...rest, connection: connection ?? { url: (await valkey.start()).url } }),
    });
    // This module is EchoMqModule's providers under this class: Nest runs a module class's
    // shutdown hook after those of its providers, so the server stops only once EchoMQ's
    // connections are closed (the orchestrator closes them in its own hook).
    return {
      ...echomq,
      module: EchoMqTestingModule,
      providers: [...(echomq.providers ?? []), { provide: TestValkey, useValue: valkey }],
      exports: [...(echomq.exports ?? []), TestValkey],
    };
  }

  /** Stops the server, last of this module's shutdown hooks. */
  async onApplicationShutdown(): Promise<void> {
    await this.valkey.stop().catch((err: unknown) => new Logger('EchoMqTestingModule').warn(`stopping the embedded Valkey: ${String(err)}`));
  }
}
