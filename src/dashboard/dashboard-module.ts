import { All, Controller, Inject, Injectable, Module, Req, Res, UseGuards, type DynamicModule } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { QueueAdmin } from '../admin/queue-admin.js';
import { BusAdmin } from '../admin/bus-admin.js';
import { CacheAdmin } from '../admin/cache-admin.js';
import { DashboardApp } from './dashboard-app.js';
import { resolveDashboardOptions, type EchoMqDashboardOptions, type ResolvedDashboardOptions } from './dashboard-options.js';
import { serveNode, type NodeRequest } from './http-adapter.js';

const DASHBOARD_OPTIONS = Symbol('EchoMqDashboardOptions');

/** The dashboard of one mount: its app (the charts read the stored history; nothing runs in the background). */
@Injectable()
export class DashboardRuntime {
  /** The dashboard (routes, pages, CSRF token). */
  readonly app: DashboardApp;

  constructor(
    @Inject(DASHBOARD_OPTIONS) readonly options: ResolvedDashboardOptions,
    @Inject(QueueAdmin) queues: QueueAdmin,
    @Inject(BusAdmin) bus: BusAdmin,
    @Inject(CacheAdmin) caches: CacheAdmin,
  ) {
    this.app = new DashboardApp({ queues, bus, caches, processCache: true, charts: options.charts }, options);
  }
}

/** The controller class of one mount: every path under it, behind the guard. */
function dashboardController(o: ResolvedDashboardOptions): new (...args: never[]) => unknown {
  class DashboardController {
    constructor(@Inject(DashboardRuntime) private readonly runtime: DashboardRuntime) {}

    async serve(req: NodeRequest, res: ServerResponse): Promise<void> {
      await serveNode(this.runtime.app, req, res, o.path);
    }
  }
  const serve = Object.getOwnPropertyDescriptor(DashboardController.prototype, 'serve')!;
  Req()(DashboardController.prototype, 'serve', 0);
  Res()(DashboardController.prototype, 'serve', 1);
  All(['', '{*rest}'])(DashboardController.prototype, 'serve', serve);
  UseGuards(o.guard)(DashboardController);
  Controller(o.path || '/')(DashboardController);
  return DashboardController;
}

/**
 * The web dashboard in your Nest app (docs/dashboard.md): `EchoMqDashboardModule.register({ path:
 * '/echomq', guard })` next to `EchoMqModule.forRoot(...)`. Server-rendered pages on Express, no
 * runtime dependency, no build step: queues with counts and throughput, jobs by status with cursor
 * pages and search by id, a job's detail, retry/remove/promote/pause buttons, Bus topics with group lag, cache namespaces and this app's cache counters.
 */
@Module({})
export class EchoMqDashboardModule {
  /** Mounts the dashboard at `path` behind `guard` (options checked now, EMQ_BAD_OPTION). */
  static register(options: EchoMqDashboardOptions): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: EchoMqDashboardModule,
      imports: [...(options.imports ?? [])],
      controllers: [dashboardController(resolved)],
      providers: [{ provide: DASHBOARD_OPTIONS, useValue: resolved }, DashboardRuntime],
    };
  }
}
