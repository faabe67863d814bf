import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QuorumUnavailableError, Redlock, type RedlockOptions } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger } from '../../support/cluster.js';

/** Nodes behind requirepass, an ACL user, and TLS: credentials work, and never leak into messages. */

const PASSWORD = 'pw-Zq8vX2-requirepass';
const ACL = { username: 'locker', password: 'pw-Kd3mR7-acl' };
const WRONG = 'pw-Wr0ng-Nn4-guess';

const engines: Redlock[] = [];
function engine(options: RedlockOptions): Redlock {
  const e = new Redlock({ restartGuard: false, nodeTimeout: 200, ttl: 2000, ...options });
  engines.push(e);
  return e;
}

/** Acquire, check exclusivity and token order, release: the set of nodes works. */
async function roundTrip(e: Redlock, resource: string): Promise<void> {
  const first = await e.acquire(resource);
  await expect(e.acquire(resource, { wait: 0 })).rejects.toThrow(/held by another owner/);
  await first.release();
  const second = await e.acquire(resource);
  expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
  await second.release();
}

describe('authentication and TLS', () => {
  let withPassword: RedisNodes | undefined;
  let withAcl: RedisNodes | undefined;
  let withTls: RedisNodes | undefined;
  let certDir: string;
  let ca: string;

  beforeAll(async () => {
    certDir = mkdtempSync(join(tmpdir(), 'redlock-tls-'));
    const file = (name: string) => join(certDir, name);
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: certDir, stdio: 'pipe' });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    openssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      file('ca.key'),
      '-out',
      file('ca.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=redlock test CA',
    );
    openssl(
      'req',
      ...ec,
      '-keyout',
      file('server.key'),
      '-out',
      file('server.csr'),
      '-subj',
      '/CN=localhost',
    );
    writeFileSync(file('san.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
    openssl(
      'x509',
      '-req',
      '-in',
      file('server.csr'),
      '-CA',
      file('ca.crt'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-out',
      file('server.crt'),
      '-days',
      '1',
      '-extfile',
      file('san.cnf'),
    );
    ca = readFileSync(file('ca.crt'), 'utf8');

    [withPassword, withAcl, withTls] = await Promise.all([
      RedisNodes.start(3, { password: PASSWORD }),
      RedisNodes.start(3, { aclUser: ACL }),
      RedisNodes.start(3, {
        tls: { certFile: file('server.crt'), keyFile: file('server.key'), caFile: file('ca.crt') },
      }),
    ]);
  });

  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    await Promise.all([withPassword?.close(), withAcl?.close(), withTls?.close()]);
    rmSync(certDir, { recursive: true, force: true });
  });

  test('requirepass nodes work through redis://:password@host:port URLs', async () => {
    const urls = withPassword!.urls;
    expect(urls[0]).toContain(encodeURIComponent(PASSWORD));
    const logger = new MemoryLogger();
    const e = engine({ nodes: urls, logger });
    expect((await e.connect()).every((s) => s.reachable)).toBe(true);
    await roundTrip(e, 'auth-password');
    // Labels used in logs and errors are redacted.
    expect(
      e
        .status()
        .map((s) => s.node)
        .join(' '),
    ).not.toContain(PASSWORD);
    expect(logger.lines.join('\n')).not.toContain(PASSWORD);
  });

  test('ACL-user nodes work through redis://user:password@host:port URLs (the default user is off)', async () => {
    const urls = withAcl!.urls;
    expect(urls[0]).toContain(`${ACL.username}:`);
    const e = engine({ nodes: urls, logger: new MemoryLogger() });
    expect((await e.connect()).every((s) => s.reachable)).toBe(true);
    await roundTrip(e, 'auth-acl');
    expect(e.status()[0]!.node).toContain(`${ACL.username}:***@`);
    expect(e.status()[0]!.node).not.toContain(ACL.password);
  });

  test.each([
    [
      'a wrong requirepass password',
      () => withPassword!.urls.map((u) => u.replace(encodeURIComponent(PASSWORD), WRONG)),
    ],
    [
      'a wrong ACL password',
      () => withAcl!.urls.map((u) => u.replace(encodeURIComponent(ACL.password), WRONG)),
    ],
    [
      'no password at all',
      () => withPassword!.urls.map((u) => u.replace(`:${encodeURIComponent(PASSWORD)}@`, '')),
    ],
  ])('%s fails acquire with an error that says authentication, without the password', async (_name, urls) => {
    const nodes = urls();
    const logger = new MemoryLogger();
    const e = engine({ nodes, logger, connectTimeout: 300 });
    const statuses = await e.connect();
    expect(statuses.every((s) => !s.reachable)).toBe(true);
    const err = await e.acquire('auth-wrong', { wait: 0 }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    const message = (err as Error).message;
    expect(message).toMatch(/authentication/i);
    // The round decides once a majority is out of reach: at least 2 of the 3 nodes are named.
    expect((err as QuorumUnavailableError).failures.length).toBeGreaterThanOrEqual(2);
    for (const f of (err as QuorumUnavailableError).failures) expect(f.reason).toMatch(/authentication/i);
    // Nothing the user sees carries a password: not the error, its failures, statuses or the log.
    const seen = [
      message,
      (err as Error).stack ?? '',
      JSON.stringify((err as QuorumUnavailableError).failures),
      JSON.stringify(statuses),
      ...logger.lines,
    ].join('\n');
    for (const secret of [WRONG, PASSWORD, ACL.password]) expect(seen).not.toContain(secret);
    expect(logger.lines.some((l) => /^warn: .*authentication/i.test(l))).toBe(true);
  });

  test('TLS nodes work with ioredis options that trust the test CA', async () => {
    const nodes = withTls!.ports.map((port) => ({
      host: '127.0.0.1',
      port,
      tls: { ca, servername: 'localhost' },
    }));
    const e = engine({ nodes, logger: new MemoryLogger() });
    expect((await e.connect()).every((s) => s.reachable)).toBe(true);
    expect(e.status()[0]!.node).toBe(`rediss://127.0.0.1:${withTls!.port(0)}`);
    await roundTrip(e, 'tls');
  });

  test('TLS nodes refuse an engine that does not trust their certificate, and say why', async () => {
    const logger = new MemoryLogger();
    const e = engine({ nodes: withTls!.urls, logger, connectTimeout: 300 });
    expect(withTls!.urls[0]).toMatch(/^rediss:\/\//);
    await e.connect();
    const err = await e.acquire('tls-untrusted', { wait: 0 }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect((err as Error).message).toMatch(/certificate/i);
    expect(logger.lines.join('\n')).toMatch(/certificate/i);
  });
});
