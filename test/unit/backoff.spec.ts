import { Backoff } from '../../src/queue/consumer/backoff.js';

describe('Backoff', () => {
  it('resumes the loop when its timer fires, even if Date.now() has not reached the deadline', async () => {
    // The extreme of Node's early timers: a clock that stands still while the timer runs out.
    const real = Date.now;
    const frozen = real();
    Date.now = () => frozen;
    try {
      let resumed = 0;
      const b = new Backoff(() => resumed++);
      expect(b.fail()).toBe(100);
      expect(b.holding).toBe(true);
      await new Promise((r) => setTimeout(r, 150));
      expect([resumed, b.holding]).toEqual([1, false]);
    } finally {
      Date.now = real;
    }
  });

  it('doubles to 5 s, resets on success, and keeps one timer', async () => {
    let resumed = 0;
    const b = new Backoff(() => resumed++);
    expect([b.fail(), b.fail(), b.fail()]).toEqual([100, 200, 400]);
    for (let i = 0; i < 10; i++) b.fail();
    expect(b.fail()).toBe(5000);
    b.succeeded();
    expect(b.fail()).toBe(100);
    await new Promise((r) => setTimeout(r, 150));
    expect(resumed).toBe(1);
    b.fail();
    b.clear();
    expect(b.holding).toBe(false);
    await new Promise((r) => setTimeout(r, 250));
    expect(resumed).toBe(1);
  });
});
