import { keySlot } from '../../src/core/slot.js';
import { namesOnDistinctOwners, parseClusterNodes, servingSlot, slotMapSignature, slotOfName } from '../../src/testing/valkey-cluster-topology.js';

const NODES = [
  'a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460 [5461->-b2]',
  'b2 127.0.0.1:7002@17002,host2 master - 0 1 2 connected 5461-10922',
  'c3 127.0.0.1:7003@17003 master,fail - 0 1 3 connected',
  'd4 127.0.0.1:7004@17004 slave b2 0 1 2 connected',
  'e5 127.0.0.1:7005@17005 master - 0 1 5 connected 10923-16383 100',
  '',
].join('\n');

describe('CLUSTER NODES parsing and name placement', () => {
  it('parses roles, flags, addresses and slot ranges (skipping migrations in progress)', () => {
    const v = parseClusterNodes(NODES);
    expect(v.map((n) => [n.id, n.port, n.role, n.failed, n.myself])).toEqual([
      ['a1', 7001, 'primary', false, true],
      ['b2', 7002, 'primary', false, false],
      ['c3', 7003, 'primary', true, false],
      ['d4', 7004, 'replica', false, false],
      ['e5', 7005, 'primary', false, false],
    ]);
    expect(v[0].slots).toEqual([[0, 5460]]);
    expect(v[3].primaryId).toBe('b2');
    expect(v[1].host).toBe('127.0.0.1');
    expect(v[4].slots).toEqual([[10923, 16383], [100, 100]]);
    expect(servingSlot(v, 5461)?.id).toBe('b2');
    expect(servingSlot(v, 16383)?.id).toBe('e5');
    expect(slotMapSignature(v)).toBe('7001:0-5460;7002:5461-10922;7005:10923-16383,100-100');
  });

  it('picks names on distinct owners, by the slot of their {tag}', () => {
    const owner = (slot: number) => (slot < 5461 ? 'a' : slot < 10923 ? 'b' : 'c');
    const names = namesOnDistinctOwners('orders', 3, owner);
    expect(names).toHaveLength(3);
    expect(new Set(names.map((n) => owner(slotOfName(n)))).size).toBe(3);
    expect(slotOfName('orders')).toBe(keySlot('emq:{orders}:meta'));
    expect(() => namesOnDistinctOwners('x', 4, owner)).toThrow(/distinct owners/);
  });
});
