import type { Command } from 'commander';
import { startStandaloneDashboard } from '../dashboard/standalone-server.js';
import type { CliContext } from './context.js';
import { CliUsageError, parseCount } from './output.js';

/** True for an address only this machine reaches. */
const isLoopback = (host: string): boolean => host === 'localhost' || host === '::1' || /^127\./.test(host);

/** Registers `echomq dashboard` (docs/dashboard.md, "Standalone"): serves until SIGINT or SIGTERM. */
export function dashboardCommand(program: Command, ctx: () => CliContext): void {
  program
    .command('dashboard')
    .description('serve the web dashboard (loopback and a token by default)')
    .option('--port <port>', 'TCP port', '3100')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--token <token>', 'the access token (default: generated and printed)')
    .option('--no-token', 'serve without a token (only where the network is trusted)')
    .option('--read-only', 'no buttons; every action refused')
    .option('--allowed-host <host>', 'a Host to answer besides localhost, 127.0.0.1 and [::1] (name or name:port; repeatable)', (v: string, all: string[]) => [...all, v], [] as string[])
    .action(async (o: { port: string; host: string; token?: string | boolean; readOnly?: boolean; allowedHost: string[] }) => {
      const port = parseCount(o.port);
      if (port > 65_535) throw new CliUsageError(`not a port: ${o.port}`);
      if (typeof o.token === 'string' && o.token.length < 16) throw new CliUsageError('--token must be at least 16 characters');
      const c = ctx();
      const { queues, bus, cache } = await c.admin();
      const token = o.token === false ? null : typeof o.token === 'string' ? o.token : undefined;
      const warn = (m: string): void => void process.stderr.write(`echomq: warning: ${m}${token === null && !isLoopback(o.host) ? ' (and it is not bound to loopback)' : ''}\n`);
      const dash = await startStandaloneDashboard({ queues, bus, caches: cache, port, host: o.host, token, readOnly: o.readOnly === true, allowedHosts: o.allowedHost, logger: { warn } });
      c.out.line(`EchoMQ dashboard: ${dash.url}`, { ok: true, url: dash.url });
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await dash.close();
    });
}
