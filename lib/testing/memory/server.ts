import { realRuntime, type Runtime } from '../../core/runtime.js';
import { FUNCTION_LIBRARY, LIBRARY_SCRIPTS } from '../../core/scripts/library.js';
import { luaScript } from '../../core/scripts/lua.js';
import { Keyspace, type KeyspaceImage } from './keyspace.js';
import { EMULATED_SCRIPTS, type Emulation } from './scripts.js';

/** The library's functions by name, emulated as their scripts are. */
const EMULATED_FUNCTIONS = new Map(
  LIBRARY_SCRIPTS.flatMap((script) => {
    const [name, run] = [FUNCTION_LIBRARY.functionOf(script), EMULATED_SCRIPTS.get(script.sha)];
    return name && run ? [[name, run] as const] : [];
  }),
);

/** Options of a {@link MemoryServer}. */
export interface MemoryServerOptions {
  /**
   * Its wall clock (key expiry, TIME) and the randomness of its run_ids: default the real ones. The
   * deterministic simulation passes its virtual runtime; {@link MemoryServer.stepClock} moves this
   * server's clock alone.
   */
  runtime?: Runtime;
  /** Its name: a label, and its shard's id in a Cluster transport (default `memory-<n>`). */
  name?: string;
  /**
   * CONFIG GET answers over the defaults (`appendonly no`, `maxmemory-policy noeviction`, ...): e.g.
   * `{ appendonly: 'yes', appendfsync: 'always' }` for a server trusted across its own restarts.
   */
  config?: Record<string, string>;
}

let servers = 0;

/** SHA1s of the sources seen (a SCRIPT LOAD or EVAL hashes none twice). */
const shas = new Map<string, string>();

/**
 * A Redis server in memory, for the in-memory transport (transport.ts): a keyspace on a clock of
 * its own, a run_id, pub/sub, a script cache, and the commands the library's voter sends. Its
 * scripts are the library's Lua scripts emulated in TypeScript (scripts.ts), held to the Lua by a
 * differential test against a real redis-server. Faults: {@link restart} (a new run_id, data kept or
 * lost), {@link stop} / {@link start}, {@link flushAll}, {@link stepClock}.
 */
export class MemoryServer extends Keyspace {
  readonly name: string;
  /** INFO's run_id: new on every start. */
  runId: string;
  /** Whether it runs (a stopped server refuses connections). */
  up = true;
  /** How far this server's wall clock is off its runtime's, ms. */
  clockOffsetMs = 0;
  private readonly runtime: Runtime;
  private readonly config: Record<string, string>;
  private readonly loaded = new Set<string>();
  /** Whether the FUNCTION library was loaded (data: kept across a restart that keeps the data). */
  private functions = false;
  private readonly channels = new Map<string, Set<(message: string) => boolean>>();
  private readonly connections = new Set<(up: boolean) => void>();

  constructor(options: MemoryServerOptions = {}) {
    super();
    this.runtime = options.runtime ?? realRuntime;
    this.name = options.name ?? `memory-${servers++}`;
    this.runId = this.newRunId();
    const defaults = { 'maxmemory-policy': 'noeviction', appendonly: 'no', appendfsync: 'everysec' };
    this.config = { ...defaults, 'cluster-enabled': 'no', ...options.config };
  }

  timeUs(): number {
    return Math.round((this.runtime.wallNow() + this.clockOffsetMs) * 1000);
  }

  /** Steps this server's wall clock by `ms` (back when negative): keys expire by it, TIME follows. */
  stepClock(ms: number): void {
    this.clockOffsetMs += ms;
  }

  /** Stops: every connection drops (subscriptions too), commands are refused until {@link start}. */
  stop(): void {
    if (!this.up) return;
    this.up = false;
    for (const connection of this.connections) connection(false);
  }

  /**
   * Starts again as a new process (new run_id, empty script cache), with its data, without, or with
   * the keys of `from` (an AOF that lost its last second, a replica that lagged).
   */
  start({ keepData = true, from }: { keepData?: boolean; from?: KeyspaceImage } = {}): void {
    if (this.up) return;
    this.runId = this.newRunId();
    this.loaded.clear();
    if (from) this.restore(from);
    else if (!keepData) {
      this.flushAll();
      this.functions = false;
    }
    this.up = true;
    for (const connection of this.connections) connection(true);
  }

  /** A crash and a start at once: `keepData` as with AOF (`appendfsync always`), none, or `from` an image. */
  restart(options: { keepData?: boolean; from?: KeyspaceImage } = {}): void {
    this.stop();
    this.start(options);
  }

  /** A connection hears the server stop and start; returns how to hang up. */
  attach(connection: (up: boolean) => void): () => void {
    this.connections.add(connection);
    return () => this.connections.delete(connection);
  }

  /**
   * SUBSCRIBE for one subscriber connection; returns how to unsubscribe. `deliver` takes a message
   * and says whether its connection is there to take it (one cut by a restart is not).
   */
  subscribe(channel: string, deliver: (message: string) => boolean): () => void {
    const subscribers = this.channels.get(channel) ?? new Set();
    this.channels.set(channel, subscribers.add(deliver));
    return () => subscribers.delete(deliver);
  }

  /** PUBLISH: hands the message to each subscriber; how many took it. */
  publish(channel: string, message: string): number {
    const subscribers = this.channels.get(channel);
    if (!subscribers?.size) return 0;
    let count = 0;
    for (const deliver of [...subscribers]) count += Number(deliver(message));
    return count;
  }

  /**
   * Runs one command as the server would, atomically; an error reply throws. The commands the
   * voter sends: EVALSHA / EVAL (NOSCRIPT until the script was loaded), SCRIPT LOAD, INFO, CONFIG
   * GET, TIME, PING, PUBLISH; FCALL / FCALL_RO / FUNCTION LOAD of this version's library (option
   * `scripts: 'functions'`); and FLUSHALL, FUNCTION FLUSH.
   */
  call(command: readonly string[]): unknown {
    if (!this.up) throw new Error(`connect ECONNREFUSED (${this.name} is stopped)`);
    const name = (command[0] ?? '').toUpperCase();
    switch (name) {
      case 'EVALSHA':
      case 'EVAL': {
        const sha = name === 'EVAL' ? this.load(command[1]) : command[1];
        if (!this.loaded.has(sha)) throw new Error('NOSCRIPT No matching script. Please use EVAL.');
        const script = EMULATED_SCRIPTS.get(sha);
        if (!script) throw new Error(`ERR ${this.name} emulates the library's scripts only, not ${sha}`);
        return this.run(script, command);
      }
      case 'FCALL':
      case 'FCALL_RO': {
        if (!this.functions) throw new Error('ERR Function not found');
        if (command[1] === FUNCTION_LIBRARY.probe) return FUNCTION_LIBRARY.version;
        const script = EMULATED_FUNCTIONS.get(command[1]);
        if (!script) throw new Error('ERR Function not found');
        return this.run(script, command);
      }
      case 'FUNCTION':
        return this.functionCommand(command);
      case 'SCRIPT':
        return this.load(command[2]);
      case 'INFO':
        return this.info(command[1] ?? 'server');
      case 'CONFIG':
        return command[2] in this.config ? [command[2], this.config[command[2]]] : [];
      case 'TIME': {
        const us = this.timeUs();
        return [String(Math.floor(us / 1e6)), String(us % 1e6)];
      }
      case 'PING':
        return 'PONG';
      case 'PUBLISH':
        return this.publish(command[1], command[2]);
      case 'FLUSHALL':
        this.flushAll();
        return 'OK';
    }
    throw new Error(
      `ERR unknown command '${command[0] ?? ''}' (${this.name} serves the lock's commands only)`,
    );
  }

  /** FUNCTION LOAD (this version's library only) and FUNCTION FLUSH. */
  private functionCommand([, sub = '', source]: readonly string[]): unknown {
    if (sub.toUpperCase() === 'FLUSH') {
      this.functions = false;
      return 'OK';
    }
    if (sub.toUpperCase() !== 'LOAD' || source !== FUNCTION_LIBRARY.source)
      throw new Error(`ERR ${this.name} emulates FUNCTION LOAD of the library of this version only`);
    if (this.functions) throw new Error(`ERR Library '${FUNCTION_LIBRARY.name}' already exists`);
    this.functions = true;
    return FUNCTION_LIBRARY.name;
  }

  /** INFO `section` (server or replication), the fields the voter reads. */
  info(section: string): string {
    if (section === 'replication') return 'role:master\r\nconnected_slaves:0\r\nsecond_repl_offset:-1\r\n';
    return `redis_version:7.0.0-memory\r\nredis_mode:standalone\r\nrun_id:${this.runId}\r\n`;
  }

  /**
   * Runs `script` on the KEYS and ARGV of `[EVAL | EVALSHA | FCALL, script, numkeys, ...keys,
   * ...args]`, copying nothing else of the command (the hot path: every vote).
   */
  private run(script: Emulation, command: readonly string[]): unknown {
    const count = Number(command[2]);
    return script(this, command.slice(3, 3 + count), command.slice(3 + count));
  }

  private load(source: string): string {
    let sha = shas.get(source);
    if (sha === undefined) shas.set(source, (sha = luaScript('', source).sha));
    this.loaded.add(sha);
    return sha;
  }

  /** 40 hex digits from the runtime's randomness (a simulation's run_ids follow its seed). */
  private newRunId(): string {
    const word = () => Math.floor(this.runtime.random() * 2 ** 32).toString(16);
    return Array.from({ length: 5 }, () => word().padStart(8, '0')).join('');
  }
}
