/**
 * Runs a command with a throwaway Valkey: starts `valkey-server` on a free loopback port, exports
 * its URL as ECHOMQ_TEST_URL, runs the command, stops the server by pid, exits with the
 * command's code. Usage: node dist/scripts/with-valkey.js <command> [args...]
 */
import { spawn } from 'node:child_process';
import { startEmbeddedValkey } from '../src/core/embedded-valkey.js';

const [cmd, ...args] = process.argv.slice(2);
if (!cmd) {
  console.error('usage: with-valkey <command> [args...]');
  process.exit(2);
}
const valkey = await startEmbeddedValkey();
const child = spawn(cmd, args, { stdio: 'inherit', env: { ...process.env, ECHOMQ_TEST_URL: valkey.url } });
const stop = () => child.kill('SIGTERM');
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
const code: number = await new Promise((resolve) => child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))));
await valkey.stop();
process.exit(code);
