import { keepServers, serversBlock, withServerSection } from './results-file.js';

/** The server dimension of test/faults/RESULTS.md: each server's section, kept across regenerations. */
const file = '# Fault-injection results\n\n| main table |\n\n## How to read the table\n\n- legend\n';

test("a server's section goes before the legend, once; a later run replaces it, others stay", () => {
  const one = withServerSection(file, 'Valkey 8.0.1', '### Valkey 8.0.1\n\n| v1 |');
  expect(one.indexOf('<!-- server: Valkey 8.0.1 -->')).toBeLessThan(one.indexOf('## How to read the table'));
  expect(one.indexOf('| main table |')).toBeLessThan(one.indexOf('## On other servers'));
  const two = withServerSection(one, 'Redis 7.4.1', '### Redis 7.4.1\n\n| r1 |');
  const again = withServerSection(two, 'Valkey 8.0.1', '### Valkey 8.0.1\n\n| v2 |');
  expect(again).toContain('| v2 |');
  expect(again).not.toContain('| v1 |');
  expect(again).toContain('| r1 |');
  expect(again.match(/## On other servers/g)).toHaveLength(1);
  expect(again.match(/<!-- server: Valkey 8.0.1 -->/g)).toHaveLength(1);
});

test("a regenerated main table keeps the servers' sections", () => {
  const old = withServerSection(file, 'Valkey 8.0.1', '| v1 |');
  const fresh = '# Fault-injection results\n\n| new main table |\n\n## How to read the table\n\n- legend\n';
  const kept = keepServers(fresh, old);
  expect(kept).toContain('| new main table |');
  expect(serversBlock(kept)).toBe(serversBlock(old));
  expect(keepServers(fresh, file)).toBe(fresh); // nothing to keep
});
