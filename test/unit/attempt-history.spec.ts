import { readFileSync } from 'node:fs';
import { decodeAttemptHistory, rowAttempts } from '../../src/queue/attempt-history.js';

/** A record as retry.lua and reap.lua write it (docs/protocol.md §3, "Attempt history"). */
const field = (s: string): string => `${Buffer.byteLength(s)}:${s}`;
const record = (...fields: string[]): string => field(fields.map(field).join(''));

describe('the attempt history format', () => {
  it('decodes the example of docs/protocol.md byte for byte', () => {
    const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');
    const example = /`(\d+:1:213:1717330000000[^`]*)` is one record/.exec(doc)?.[1];
    expect(example).toBeDefined();
    expect(decodeAttemptHistory(example)).toEqual({
      attempts: [{ attempt: 2, startedAt: new Date(1717330000000), endedAt: new Date(1717330000420), durationMs: 420, worker: 'host:91', outcome: 'failed', error: 'Error: boom', stack: undefined }],
    });
  });

  it('counts bytes, not characters, and ignores fields after the seventh', () => {
    const h = record('1', '', '1717330000000', 'lease-expired', '', 'lease expired', '') + record('2', '5', '9', 'failed', 'wörker:1', 'É: ✓', 'at ü\n  at v', 'a later field');
    expect(decodeAttemptHistory(h).attempts.map((a) => [a.attempt, a.startedAt, a.durationMs, a.worker, a.outcome, a.error, a.stack])).toEqual([
      [1, undefined, undefined, undefined, 'lease-expired', 'lease expired', undefined],
      [2, new Date(5), 4, 'wörker:1', 'failed', 'É: ✓', 'at ü\n  at v'],
    ]);
  });

  it('never throws on text not in the format: the records before the fault are kept, the text reported raw', () => {
    const good = record('1', '5', '9', 'failed', 'w', 'e', 's');
    for (const bad of ['x', '12:3:1', '5:abcde', `${good}99:\x1b[31m`, record('a', '5', '9', 'failed', '', '', ''), record('1', 'soon', '9', 'failed', '', '', ''), record('1', '5', '9', '', '', '', ''), record('1', '5', '9', 'failed')]) {
      const r = decodeAttemptHistory(bad);
      expect(r.error).toMatchObject({ code: 'EMQ_BAD_PAYLOAD', raw: bad });
      expect(r.attempts).toHaveLength(bad.startsWith(good) ? 1 : 0);
    }
  });

  it("adds the running or completed attempt from the row's attempts, started and finished", () => {
    const hist = record('1', '100', '150', 'failed', 'w', 'e', '');
    expect(rowAttempts({ status: 'done', attempts: '2', started: '200', finished: '260', hist }).attemptHistory.map((a) => [a.attempt, a.outcome, a.durationMs])).toEqual([[1, 'failed', 50], [2, 'done', 60]]);
    expect(rowAttempts({ status: 'active', attempts: '1', started: '200' }).attemptHistory).toEqual([expect.objectContaining({ attempt: 1, outcome: 'running', endedAt: undefined, durationMs: undefined })]);
    expect(rowAttempts({ status: 'scheduled', attempts: '1', started: '100', hist }).attemptHistory.map((a) => a.outcome)).toEqual(['failed']);
    expect(rowAttempts({ status: 'pending', attempts: '0' })).toEqual({ attemptHistory: [], startedAt: undefined, attemptHistoryError: undefined });
  });
});
