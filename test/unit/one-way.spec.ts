import {
  oneWayScriptCall,
  OneWayWires,
  UnconfirmedCalls,
  type OneWayCall,
} from '../../lib/core/voter/one-way.js';

const script = { name: 'release', source: 'return 1', sha: 'e0e1f9fabfc9d4800c877a703b823ac0578ff8db' };
const call = (value: string): OneWayCall => ({ script, keys: ['redlock:{r}'], args: [value] });

describe('one-way calls (no Redis: the bytes and the bookkeeping)', () => {
  test('CLIENT REPLY SKIP, then EVALSHA with byte lengths (not string lengths) for UTF-8 keys and values', () => {
    const wire = oneWayScriptCall(script.sha, ['redlock:{résumé-🔒}'], ['välue']);
    expect(wire).toBe(
      '*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n' +
        `*5\r\n$7\r\nEVALSHA\r\n$40\r\n${script.sha}\r\n$1\r\n1\r\n` +
        '$23\r\nredlock:{résumé-🔒}\r\n$6\r\nvälue\r\n',
    );
  });

  test("an engine's encoder encodes a release once for all its voters (same arrays), anew for any other call", () => {
    const wires = new OneWayWires();
    const other = { ...script, name: 'abandon', sha: 'f'.repeat(40) };
    const keys = ['redlock:{r}', 'redlock:{r}:fence', 'redlock:{r}:queue'];
    const args = ['v1', '60000 1000 100 10000 200'];
    const first = wires.oneWayWire(script, keys, args);
    expect(first).toBe(oneWayScriptCall(script.sha, keys, args));
    expect(wires.oneWayWire(script, keys, args)).toBe(first);
    expect(wires.oneWayWire(other, keys, args)).toBe(oneWayScriptCall(other.sha, keys, args));
    const args2 = ['v2', args[1]!];
    expect(wires.oneWayWire(other, keys, args2)).toBe(oneWayScriptCall(other.sha, keys, args2));
    const keys2 = ['redlock:{s}', 'redlock:{s}:fence', 'redlock:{s}:queue'];
    expect(wires.oneWayWire(other, keys2, args2)).toBe(oneWayScriptCall(other.sha, keys2, args2));
  });

  test('a reply to a call sent after one-way calls confirms them; later ones stay until their own confirmation', () => {
    const calls = new UnconfirmedCalls();
    const decode = (reply: unknown) => `decoded ${String(reply)}`;
    calls.sentNow(call('a'));
    calls.sentNow(call('b'));
    const afterB = calls.confirmingBy(decode); // an answered call sent now
    calls.sentNow(call('c'));
    expect(afterB('OK')).toBe('decoded OK');
    expect(calls.pending).toBe(true);
    expect(calls.takeAll().map((c) => c.args[0])).toEqual(['c']); // a and b ran: confirmed
    expect(calls.pending).toBe(false);
  });

  test('replies that arrive for calls sent before a one-way call confirm nothing of it', () => {
    const calls = new UnconfirmedCalls();
    calls.sentNow(call('a'));
    const afterA = calls.confirmingBy((r) => r);
    calls.sentNow(call('b'));
    const afterB = calls.confirmingBy((r) => r);
    calls.sentNow(call('c'));
    afterA(1);
    expect(calls.takeAll().map((c) => c.args[0])).toEqual(['b', 'c']);
    afterB(1); // after takeAll (a NOSCRIPT sent them again): nothing left to confirm, no error
    expect(calls.pending).toBe(false);
  });

  test('at most 1024 unconfirmed calls per connection (a paused node confirms nothing): then it says full', () => {
    const calls = new UnconfirmedCalls();
    for (let i = 0; i < 1023; i++) calls.sentNow(call(String(i)));
    expect(calls.full).toBe(false);
    calls.sentNow(call('1023'));
    expect(calls.full).toBe(true);
    const confirm = calls.confirmingBy((r) => r);
    confirm('OK');
    expect(calls.full).toBe(false);
  });
});
