import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

afterAll(async () => {
  await f.queues?.flows.close();
});

describe('flows: removeChildDependency (the parent stops waiting for a child)', () => {
  it('the parent runs without the removed child; the child, untouched, runs later and is ignored', async () => {
    const [p, c, stuck] = [randomQueue('gp'), randomQueue('gc'), randomQueue('gs')];
    const flow = await f.queues.flow({ queue: p, payload: {}, children: [{ queue: c, key: 'ok', payload: {} }, { queue: stuck, key: 'gone', payload: {} }] });
    const [, gone] = flow.children;
    await eventually(async () => (await f.queues.getJob(stuck, gone.id)) !== null, 5000, 'the child to be created');
    f.consumers.push((await startConsumer(f.conn, c, () => 1)).consumer);
    f.consumers.push((await startConsumer(f.conn, p, () => 2)).consumer);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.waitingFor === 1, 5000, 'one child left');
    expect(await f.queues.flows.removeChildDependency(stuck, gone.id)).toBe(true);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'done', 5000, 'the parent to run');
    expect((await f.queues.getJob(p, flow.id))?.children?.map((k) => k.key)).toEqual(['ok']);
    expect(await f.queues.flows.removeChildDependency(stuck, gone.id)).toBe(false); // no longer its child
    // The child still runs; its outcome is ignored by the parent (not one of its children).
    f.consumers.push((await startConsumer(f.conn, stuck, () => 3)).consumer);
    await eventually(async () => (await f.queues.getJob(stuck, gone.id))?.status === 'done', 5000, 'the child to run');
    await eventually(async () => (await f.raw.hlen(`emq:{${stuck}}:outbox`)) === 0, 5000, 'its hand-off to be relayed');
    expect((await f.queues.getJob(p, flow.id))?.children?.map((k) => k.key)).toEqual(['ok']);
  });

  it('false for a job without a parent, or whose outcome reached its parent', async () => {
    const q = randomQueue('gq');
    const id = await f.queues.enqueue(q, {});
    expect(await f.queues.flows.removeChildDependency(q, id)).toBe(false);
    const [p, c] = [randomQueue('gp'), randomQueue('gc')];
    const flow = await f.queues.flow({ queue: p, payload: {}, children: [{ queue: c, payload: {} }, { queue: c, payload: {} }] });
    f.consumers.push((await startConsumer(f.conn, c, () => 1)).consumer);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'pending', 5000, 'the parent to be released');
    expect(await f.queues.flows.removeChildDependency(c, flow.children[0].id)).toBe(false);
  });
});

describe('flows: attaching children to a waiting parent', () => {
  it('a waiting parent waits for its new children too, then runs with all of them', async () => {
    const [p, c, d] = [randomQueue('ap'), randomQueue('ac'), randomQueue('ad')];
    const flow = await f.queues.flow({ queue: p, payload: {}, children: [{ queue: c, key: 'first', payload: 1 }] });
    const added = await f.queues.flows.attach(p, flow.id, [{ queue: d, key: 'later', payload: 2 }, { queue: p, key: 'same', payload: 3 }]);
    expect(added.map((n) => n.key)).toEqual(['later', 'same']);
    expect((await f.queues.getJob(p, flow.id))?.waitingFor).toBe(3);
    f.consumers.push((await startConsumer(f.conn, c, (j) => j.payload)).consumer);
    f.consumers.push((await startConsumer(f.conn, d, (j) => j.payload)).consumer);
    let seen: string[] = [];
    f.consumers.push((await startConsumer(f.conn, p, async (j) => {
      if (j.id === flow.id) seen = (await f.queues.flows.children(p, j.id)).list.map((r) => `${r.key}=${String(r.result)}`);
      return j.payload;
    })).consumer);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'done', 5000, 'the parent to run');
    expect(seen.sort()).toEqual(['first=1', 'later=2', 'same=3']);
  });

  it('refuses a job that is not a waiting parent (EMQ_JOB_STATE), and a repeated key, writing nothing', async () => {
    const [p, c] = [randomQueue('ap'), randomQueue('ac')];
    const plain = await f.queues.enqueue(p, {});
    const before = await f.raw.hlen(`emq:{${c}}:data`);
    await expect(f.queues.flows.attach(p, plain, [{ queue: c, payload: {} }])).rejects.toMatchObject({ code: 'EMQ_JOB_STATE' });
    const flow = await f.queues.flow({ queue: p, payload: {}, children: [{ queue: c, key: 'k', payload: {} }] });
    await expect(f.queues.flows.attach(p, flow.id, [{ queue: c, key: 'k', payload: {} }])).rejects.toMatchObject({ code: 'EMQ_BAD_ARG' });
    expect((await f.queues.getJob(p, flow.id))?.waitingFor).toBe(1);
    expect(before).toBe(0);
  });
});

describe('flows: getFlow reads a whole tree, paged', () => {
  it('reads every level with statuses and recorded outcomes; pages children with limit and offset', async () => {
    const [p, c, d] = [randomQueue('tp'), randomQueue('tc'), randomQueue('td')];
    const flow = await f.queues.flow({
      queue: p,
      payload: {},
      children: [
        { queue: c, key: 'mid', payload: {}, children: [{ queue: d, key: 'x', payload: 1 }, { queue: d, key: 'y', payload: 2 }] },
        { queue: c, key: 'leaf', payload: {}, onFailure: 'continue' },
      ],
    });
    const waiting = await f.queues.flows.getFlow(p, flow.id);
    expect(waiting).toMatchObject({ id: flow.id, queue: p, status: 'waiting', childCount: 2 });
    f.consumers.push((await startConsumer(f.conn, d, (j) => j.payload)).consumer);
    f.consumers.push((await startConsumer(f.conn, c, (j) => {
      if (j.id === flow.children[1].id) throw new Error('nope');
      return 'mid';
    }, { attempts: 1 })).consumer);
    f.consumers.push((await startConsumer(f.conn, p, () => 'root')).consumer);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'done', 5000, 'the flow to finish');
    const tree = await f.queues.flows.getFlow(p, flow.id);
    expect(tree).toEqual({
      id: flow.id, queue: p, status: 'done', childCount: 2,
      children: [
        {
          id: flow.children[0].id, queue: c, status: 'done', key: 'mid', policy: 'fail', outcome: 'done', result: 'mid', childCount: 2,
          children: [
            { id: flow.children[0].children[0].id, queue: d, status: 'done', key: 'x', policy: 'fail', outcome: 'done', result: 1, childCount: 0, children: [] },
            { id: flow.children[0].children[1].id, queue: d, status: 'done', key: 'y', policy: 'fail', outcome: 'done', result: 2, childCount: 0, children: [] },
          ],
        },
        { id: flow.children[1].id, queue: c, status: 'dead', key: 'leaf', policy: 'continue', outcome: 'failed', error: expect.stringContaining('nope'), childCount: 0, children: [] },
      ],
    });
    const page = await f.queues.flows.getFlow(p, flow.id, { limit: 1, offset: 1, depth: 1 });
    expect(page?.children.map((k) => k.key)).toEqual(['leaf']);
    expect((await f.queues.flows.getFlow(p, flow.id, { depth: 1 }))?.children[0].children).toEqual([]);
    expect((await f.queues.flows.getFlow(p, flow.id, { depth: 0 }))?.children).toEqual([]);
    expect(await f.queues.flows.getFlow(p, f.queues.mintId())).toBeNull();
    await expect(f.queues.flows.getFlow(p, flow.id, { limit: 0 })).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
  });
});

describe('flows: resuming a failed flow by retrying its failed child', () => {
  it('the buried root waits again, the child is retried, and the parent runs with every result', async () => {
    const [p, c, b] = [randomQueue('xp'), randomQueue('xc'), randomQueue('xb')];
    let fixed = false;
    const flow = await f.queues.flow({ queue: p, payload: {}, children: [{ queue: c, key: 'ok', payload: 1 }, { queue: b, key: 'bad', payload: 2 }] });
    f.consumers.push((await startConsumer(f.conn, c, (j) => j.payload)).consumer);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.waitingFor === 1, 5000, 'the first child to finish');
    f.consumers.push((await startConsumer(f.conn, b, (j) => {
      if (!fixed) throw new Error('not yet');
      return j.payload;
    }, { attempts: 1 })).consumer);
    let result: string[] = [];
    f.consumers.push((await startConsumer(f.conn, p, async (j) => {
      result = (await f.queues.flows.children(p, j.id)).list.map((r) => `${r.key}=${String(r.result)}`);
      return 'root';
    })).consumer);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'dead', 5000, 'the parent to be buried');
    fixed = true;
    await f.queues.flows.retryChild(b, flow.children[1].id);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'done', 5000, 'the parent to run');
    expect(result.sort()).toEqual(['bad=2', 'ok=1']);
    expect((await f.queues.counts(p)).dead).toBe(0);
  });

  it('refuses a job that is not a dead child, and a parent whose siblings were cancelled (EMQ_JOB_STATE, nothing changed)', async () => {
    const [p, c] = [randomQueue('xp'), randomQueue('xc')];
    const plain = await f.queues.enqueue(c, {});
    await expect(f.queues.flows.retryChild(c, plain)).rejects.toMatchObject({ code: 'EMQ_JOB_STATE' });
    const flow = await f.queues.flow({ queue: p, payload: {}, children: [{ queue: c, key: 'bad', payload: { bad: true } }, { queue: c, key: 'later', payload: {}, delay: 60_000 }] });
    f.consumers.push((await startConsumer(f.conn, c, (j) => {
      if ((j.payload as { bad?: boolean }).bad) throw new Error('no');
      return 1;
    }, { attempts: 1 })).consumer);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'dead', 5000, 'the parent to be buried');
    await eventually(async () => (await f.queues.getJob(c, flow.children[1].id))?.status === 'cancelled', 5000, 'the sibling to be cancelled');
    await expect(f.queues.flows.retryChild(c, flow.children[0].id)).rejects.toMatchObject({ code: 'EMQ_JOB_STATE' });
    expect((await f.queues.getJob(p, flow.id))?.status).toBe('dead');
    expect((await f.queues.getJob(c, flow.children[0].id))?.status).toBe('dead');
  });
});
