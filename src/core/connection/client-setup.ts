import { Cluster, type Command, type Redis } from 'iovalkey';
import { fromReplyError } from '../reply-errors.js';

/** A client EchoMQ opened (iovalkey's Redis or Cluster). */
type AnyClient = Redis | Cluster;

/** What an EchoMQ connection is for, as its `CLIENT LIST` name shows: `emq:<role>:<node>`. */
export type ClientRole = 'cmd' | 'block' | 'sub';

/**
 * The name EchoMQ gives a connection: `emq:<role>:<node>` (e.g. `emq:block:12`), or
 * `emq:<role>:p<pid>` before the process holds a node number.
 */
export function clientName(role: ClientRole, node?: number): string {
  return `emq:${role}:${node ?? `p${process.pid}`}`;
}

/**
 * Makes every command on `client` fail with a typed `EchoMqError` (see `fromReplyError`): the one
 * place replies are mapped, so a raw command issued anywhere in the package (outside the script
 * registry too) never rejects with a bare `ReplyError`. Cluster redirections are still followed
 * first (the cluster client wraps the rejection after this, and sees the raw reply).
 */
export function typedErrors(client: AnyClient): void {
  const send = client.sendCommand.bind(client) as (command: Command, ...rest: unknown[]) => unknown;
  const wrapped = (command: Command, ...rest: unknown[]): unknown => {
    const reject = command.reject;
    command.reject = (err: Error) => reject(fromReplyError(err));
    return send(command, ...rest);
  };
  (client as { sendCommand: unknown }).sendCommand = wrapped;
}

/**
 * Names the connection(s) of `client`: now (`CLIENT SETNAME`) and after every reconnect (the
 * client's `connectionName` option). A user without `client|setname` keeps unnamed connections;
 * nothing else changes.
 */
export async function nameClient(client: AnyClient, name: string): Promise<void> {
  const targets: Redis[] = [];
  if (client instanceof Cluster) {
    if (client.options.redisOptions) client.options.redisOptions.connectionName = name;
    targets.push(...client.nodes());
  } else targets.push(client);
  await Promise.all(
    targets.map(async (c) => {
      c.options.connectionName = name;
      if (c.status !== 'ready') return;
      await c.client('SETNAME', name).catch(() => undefined);
    }),
  );
}
