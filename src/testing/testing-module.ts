import { Logger, Module, type DynamicModule, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { EchoMqConnection, type ValkeyClient, type ValkeyConnectionOptions } from '../core/connection/index.js';
import { refuseNonObject } from '../core/known-keys.js';
import { EchoMqModule } from '../nest/echomq-module.js';
import type { EchoMqModuleOptions } from '../nest/echomq-options.js';
import { validateModuleOptions } from '../nest/echomq-validation.js';
import { startEmbeddedValkey, validateEmbeddedValkeyOptions, type EmbeddedValkey, type EmbeddedValkeyOptions } from '../core/embedded-valkey.js';

/** Options of `EchoMqTestingModule.forRoot`: the module's options (`telemetry` off unless given), and where Valkey comes from. */
export interface EchoMqTestingOptions extends Omit<EchoMqModuleOptions, 'connection'> {
  /** Use this Valkey instead of starting one (it is then neither started nor stopped here). */
  readonly connection?: ValkeyConnectionOptions;
  /** Options of the embedded `valkey-server` (extra arguments, the binary). */
  readonly valkey?: EmbeddedValkeyOptions;
}

/** The sockets of a client (a cluster's, one per node). */
const socketsOf = (c: ValkeyClient): { ref(): unknown; unref(): unknown }[] =>
  ('nodes' in c ? c.nodes() : [c]).flatMap((n) => (n.stream ? [n.stream] : []));

/**
 * The Valkey of one `EchoMqTestingModule`: started when the module's options are resolved (at
 * `compile()`), stopped by pid when the application (or testing module) closes, after EchoMQ's
 * own connections have closed. Inject it to reach the server (`url`, `port`, `pid`).
 *
 * A compile that fails (a provider of the test's module cannot be resolved) runs no hook, so
 * nothing would stop the server or close EchoMQ's connection: the server dies with the test
 * process (see `startEmbeddedValkey`), and the connection's sockets keep nothing alive until
 * the module is initialised (`app.init()`, `moduleRef.init()`), so jest still exits.
 */
export class TestValkey {
  private server?: EmbeddedValkey;
  private starting?: Promise<EmbeddedValkey>;
  /** The command clients held unref'd until the module is initialised. */
  private readonly held = new Set<ValkeyClient>();
  private initialised = false;

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
      return s;
    });
    return this.starting;
  }

  /**
   * Keeps the connection's command client from holding the process open until the module is
   * initialised (its sockets unref'd, again at every reconnect): after a failed compile nothing
   * closes it. Called by the module when the connection is made.
   */
  hold(conn: EchoMqConnection): void {
    const client = conn.client;
    if (this.initialised) return;
    this.held.add(client);
    const unref = (): void => {
      if (!this.initialised) for (const s of socketsOf(client)) s.unref();
    };
    client.on('connect', unref);
    unref();
  }

  /** The module is initialised (its hooks run, so its close will run too): the held sockets count again. */
  initialise(): void {
    this.initialised = true;
    for (const c of this.held) for (const s of socketsOf(c)) s.ref();
    this.held.clear();
  }

  /** Stops the server by pid and removes its folder; a no-op when none runs. */
  async stop(): Promise<void> {
    const s = this.server ?? (await this.starting?.catch(() => undefined));
    this.server = undefined;
    this.starting = undefined;
    this.initialised = false;
    await s?.stop();
  }
}

/** The testing module's default `telemetry`: neither spans nor OpenTelemetry instruments. */
const NO_TELEMETRY = { tracing: false, otelMetrics: false } as const;

/** DI token of the provider that holds the connection unref'd until init. */
const HELD = Symbol('ECHOMQ_TESTING_HELD');

/**
 * EchoMQ for tests: `EchoMqModule` on a throwaway `valkey-server` of its own, started at
 * `compile()` and stopped (by pid, no process left) when the app or testing module closes, after
 * EchoMQ's connections have closed. Every `forRoot()` gets its own server, so test files never
 * share keys; tests of one file that share a server use `uniqueQueueName()`, since the key
 * grammar has no prefix. Give `connection` to run on a server of your own. See docs/testing.md.
 */
@Module({})
export class EchoMqTestingModule implements OnModuleInit, OnApplicationShutdown {
  constructor(private readonly valkey: TestValkey) {}

  /**
   * EchoMQ with these options (every `EchoMqModule` option), on a server of its own. The options
   * are checked here, before any server starts: a bad one throws `InvalidOptionError`
   * (EMQ_BAD_OPTION) and leaves no process.
   */
  static forRoot(options: EchoMqTestingOptions = {}): DynamicModule {
    refuseNonObject(options, 'EchoMqTestingModule.forRoot options');
    const { valkey: serverOptions, connection, ...rest } = options;
    validateEmbeddedValkeyOptions(serverOptions, 'EchoMqTestingModule.forRoot options', 'valkey');
    // The module checks them again once the factory gave the server's URL; a stand-in URL here.
    validateModuleOptions({ ...rest, connection: connection ?? { url: 'redis://127.0.0.1:6379' } });
    const valkey = new TestValkey(serverOptions);
    const echomq = EchoMqModule.forRootAsync({
      // Telemetry off unless asked for: after a failed compile the module's providers are still
      // made in the background, and loading `@opentelemetry/api` then would import a file after
      // jest tore the test file's environment down (an error that fails the run).
      useFactory: async (): Promise<EchoMqModuleOptions> => ({ telemetry: NO_TELEMETRY, ...rest, connection: connection ?? { url: (await valkey.start()).url } }),
    });
    // This module is EchoMqModule's providers under this class: Nest runs a module class's
    // shutdown hook after those of its providers, so the server stops only once EchoMQ's
    // connections are closed (the orchestrator closes them in its own hook).
    return {
      ...echomq,
      module: EchoMqTestingModule,
      providers: [
        ...(echomq.providers ?? []),
        { provide: TestValkey, useValue: valkey },
        { provide: HELD, inject: [EchoMqConnection], useFactory: (conn: EchoMqConnection) => valkey.hold(conn) },
      ],
      exports: [...(echomq.exports ?? []), TestValkey],
    };
  }

  /** The module is initialised: its connection's sockets hold the process open again. */
  onModuleInit(): void {
    this.valkey.initialise();
  }

  /** Stops the server, last of this module's shutdown hooks. */
  async onApplicationShutdown(): Promise<void> {
    await this.valkey.stop().catch((err: unknown) => new Logger('EchoMqTestingModule').warn(`stopping the embedded Valkey: ${String(err)}`));
  }
}
