import { randomBytes } from 'node:crypto';
import type { Redis } from 'iovalkey';

/** A Valkey ACL user made for one test: its name and password, and how to drop it. */
export interface TestUser {
  readonly username: string;
  readonly password: string;
  /** Replaces the user's rules (`ACL SETUSER <name> reset on >pw …rules`). */
  set(...rules: string[]): Promise<void>;
  /** Deletes the user (its connections are closed by the server). */
  drop(): Promise<void>;
}

/** Creates an ACL user with `rules` (after `reset on >password`) through the admin client `raw`. */
export async function aclUser(raw: Redis, rules: readonly string[], prefix = 'emq-test'): Promise<TestUser> {
  const username = `${prefix}-${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  const user: TestUser = {
    username,
    password,
    async set(...r: string[]) {
      await raw.call('ACL', ['SETUSER', username, 'reset', 'on', `>${password}`, ...r]);
    },
    async drop() {
      await raw.call('ACL', ['DELUSER', username]);
    },
  };
  await user.set(...rules);
  return user;
}

/** Every permission, on every key and channel. */
export const ALL = ['~*', '&*', '+@all'] as const;
