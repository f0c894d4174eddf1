import { EchoMqError } from '../../src/core/errors.js';
import { describeError, fromReplyError } from '../../src/core/reply-errors.js';

/** What a reply maps to: [code, class name, message]. */
const mapped = (text: string): [string, string, string] => {
  const e = fromReplyError(new Error(text));
  return [e.code, e.name, e.message];
};

describe('fromReplyError: every reply maps to a typed EchoMqError', () => {
  it.each([
    ["OOM command not allowed when used memory > 'maxmemory'.", 'EMQ_OOM', 'OutOfMemoryError'],
    ["OOM command not allowed when used memory > 'maxmemory'. script: 28cf, on @user_script:91.", 'EMQ_OOM', 'OutOfMemoryError'],
    ['NOPERM No permissions to access a key', 'EMQ_NOPERM', 'PermissionDeniedError'],
    ["NOPERM User u has no permissions to run the 'set' command", 'EMQ_NOPERM', 'PermissionDeniedError'],
    ["ERR ACL failure in script: User v has no permissions to run the 'time' command script: 104a, on @user_script:1.", 'EMQ_NOPERM', 'PermissionDeniedError'],
    ['WRONGTYPE Operation against a key holding the wrong kind of value', 'EMQ_WRONGTYPE', 'WrongTypeError'],
    ['NOAUTH Authentication required.', 'EMQ_AUTH', 'AuthenticationError'],
    ['WRONGPASS invalid username-password pair or user is disabled.', 'EMQ_AUTH', 'AuthenticationError'],
    ['ERR invalid password', 'EMQ_AUTH', 'AuthenticationError'],
    ["READONLY You can't write against a read only replica.", 'EMQ_READONLY', 'ReadOnlyError'],
    ['BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.', 'EMQ_BUSY', 'ServerBusyError'],
    ['LOADING Valkey is loading the dataset in memory', 'EMQ_LOADING', 'ServerLoadingError'],
    ['CLUSTERDOWN The cluster is down', 'EMQ_UNAVAILABLE', 'ServerRefusalError'],
    ['MOVED 3999 127.0.0.1:6381', 'EMQ_UNAVAILABLE', 'ServerRefusalError'],
    ['ASK 3999 127.0.0.1:6381', 'EMQ_UNAVAILABLE', 'ServerRefusalError'],
    ['TRYAGAIN Multiple keys request during rehashing of slot', 'EMQ_UNAVAILABLE', 'ServerRefusalError'],
    ['MISCONF Errors writing to the AOF file', 'EMQ_UNAVAILABLE', 'ServerRefusalError'],
  ])('%s → %s', (text, code, name) => {
    // The server's text is the message, whatever its code.
    expect(mapped(text)).toEqual([code, name, text]);
  });

  it('keeps the original reply as the cause', () => {
    const reply = new Error('OOM command not allowed');
    expect(fromReplyError(reply).cause).toBe(reply);
  });

  it('maps a lost connection or a timeout to EMQ_UNAVAILABLE', () => {
    for (const text of ['connect ECONNREFUSED 127.0.0.1:1', 'Connection is closed.', 'Command timed out', 'Reached the max retries per request limit (which is 2). Refer to "maxRetriesPerRequest" option for details.']) {
      const e = fromReplyError(new Error(text));
      expect([e.code, e.name, e.message]).toEqual(['EMQ_UNAVAILABLE', 'ValkeyUnavailableError', `Valkey is unavailable: ${text}`]);
    }
  });

  it("maps a script's EMQ_<CODE> reply to its class, and an unknown EMQ code to EMQ_INTERNAL", () => {
    expect(mapped('EMQ_BAD_ARG lease must be an integer')).toEqual(['EMQ_BAD_ARG', 'EchoMqError', 'lease must be an integer']);
    expect(mapped('EMQ_WRONGTYPE emq:{q}:meta is not a hash')).toEqual(['EMQ_WRONGTYPE', 'WrongTypeError', 'emq:{q}:meta is not a hash']);
    expect(mapped('EMQ_SOMETHING_NEW text')).toEqual(['EMQ_INTERNAL', 'EchoMqError', 'text']);
  });

  it('maps anything else to EMQ_INTERNAL with its text, including near-miss words', () => {
    for (const text of ['ERR unknown command', 'NOSCRIPT No matching script. Please use EVAL.', 'BUSYGROUP Consumer Group name already exists', 'BUSYKEY Target key name already exists.', 'no reply']) {
      expect(mapped(text)).toEqual(['EMQ_INTERNAL', 'EchoMqError', text]);
    }
    expect(fromReplyError('a string').code).toBe('EMQ_INTERNAL');
    expect(fromReplyError(undefined)).toBeInstanceOf(EchoMqError);
  });

  it('is idempotent', () => {
    const once = fromReplyError(new Error('NOPERM No permissions to access a key'));
    expect(fromReplyError(once)).toBe(once);
  });

  it('describes an error with its code', () => {
    expect(describeError(fromReplyError(new Error('OOM command not allowed')))).toBe('EMQ_OOM OOM command not allowed');
    expect(describeError(new Error('plain'))).toBe('plain');
  });
});
