import { clientCount, clientNames, commandCalls, cpuUs, perRepRatios, redirections } from '../cluster-stats.js';

// Replies as Valkey 8 sends them (CRLF lines, a section header).
const commandstats = [
  '# Commandstats',
  'cmdstat_evalsha:calls=120,usec=900,usec_per_call=7.50,rejected_calls=0,failed_calls=0',
  'cmdstat_llen:calls=30,usec=10,usec_per_call=0.33,rejected_calls=0,failed_calls=0',
  'cmdstat_info:calls=4,usec=80,usec_per_call=20.00,rejected_calls=0,failed_calls=0',
  'cmdstat_config|resetstat:calls=1,usec=5,usec_per_call=5.00,rejected_calls=0,failed_calls=0',
  'cmdstat_client|list:calls=2,usec=9,usec_per_call=4.50,rejected_calls=0,failed_calls=0',
  'cmdstat_client|setname:calls=3,usec=1,usec_per_call=0.33,rejected_calls=0,failed_calls=0',
  'cmdstat_cluster|slots:calls=2,usec=40,usec_per_call=20.00,rejected_calls=0,failed_calls=0',
  '',
].join('\r\n');

describe('bench cluster rows: reading the nodes', () => {
  it('counts the system commands, leaving out the bench’s own INFO / CONFIG / CLIENT LIST / FLUSHALL', () => {
    // evalsha 120 + llen 30 + client|setname 3 + cluster|slots 2: a client's own setup and topology reads count.
    expect(commandCalls(commandstats)).toBe(155);
    expect(commandCalls('# Commandstats\r\n')).toBe(0);
  });

  it('reads MOVED and ASK from INFO errorstats, 0 when absent', () => {
    expect(redirections('# Errorstats\r\nerrorstat_MOVED:count=7\r\nerrorstat_ASK:count=2\r\nerrorstat_ERR:count=1\r\n')).toEqual({ moved: 7, ask: 2 });
    expect(redirections('# Errorstats\r\n')).toEqual({ moved: 0, ask: 0 });
  });

  it('reads the server CPU in µs', () => {
    expect(cpuUs('# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.0\r\n')).toBeCloseTo(3_750_000, 3);
  });

  const list = [
    'id=3 addr=127.0.0.1:5000 laddr=127.0.0.1:6379 fd=8 name=bench-probe age=1 idle=0 flags=N db=0 cmd=client|list',
    'id=4 addr=127.0.0.1:5001 laddr=127.0.0.1:6379 fd=9 name=emq:cmd:1 age=1 idle=0 flags=N db=0 cmd=evalsha',
    'id=5 addr=127.0.0.1:5002 laddr=127.0.0.1:6379 fd=10 name=emq:cmd:12 age=1 idle=0 flags=N db=0 cmd=evalsha',
    'id=6 addr=127.0.0.1:5003 laddr=127.0.0.1:6379 fd=11 name= age=1 idle=0 flags=N db=0 cmd=llen',
    '',
  ].join('\n');

  it('counts CLIENT LIST connections, the named exceptions left out', () => {
    expect(clientCount(list)).toBe(4);
    expect(clientCount(list, ['bench-probe'])).toBe(3);
    expect(clientCount('')).toBe(0);
  });

  it('groups CLIENT LIST connections by name with the digits folded', () => {
    expect(clientNames(list, ['bench-probe'])).toEqual({ 'emq:cmd:N': 2, '(none)': 1 });
  });

  it('pairs the ratios by repetition and skips repetitions the base lacks', () => {
    const v = new Map([[2, 30], [0, 10], [1, 20]]);
    const base = new Map([[0, 5], [1, 10]]);
    expect(perRepRatios(v, base)).toEqual([2, 2]);
    expect(perRepRatios(v, new Map([[0, 0]]))).toEqual([]);
  });
});
