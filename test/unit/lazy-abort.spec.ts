import { LazyAbort } from '../../src/core/lazy-abort.js';

describe('LazyAbort (an abort signal made on first use)', () => {
  it('a signal read after abort is already aborted, with the first reason', () => {
    const a = new LazyAbort();
    const first = new Error('shut down');
    a.abort(first);
    a.abort(new Error('later'));
    expect(a.signal.aborted).toBe(true);
    expect(a.signal.reason).toBe(first);
  });

  it('a signal read before abort fires its listeners once, and is the same signal every time', () => {
    const a = new LazyAbort();
    const s = a.signal;
    let fired = 0;
    s.addEventListener('abort', () => fired++);
    expect(s.aborted).toBe(false);
    a.abort('stop');
    a.abort('again');
    expect([fired, s.aborted, s.reason, a.signal === s]).toEqual([1, true, 'stop', true]);
  });
});
