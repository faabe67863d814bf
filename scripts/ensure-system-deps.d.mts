/** Types for scripts/ensure-system-deps.mjs (plain JavaScript: it runs before anything is built). */
export type Mode = 'sample' | 'test' | 'faults' | 'soak' | 'bench' | 'servers';
export type ToolId =
  | 'redis-server'
  | 'postgresql'
  | 'mariadb'
  | 'openssl'
  | 'faketime'
  | 'gcc'
  | 'make'
  | 'chromium'
  | 'nft'
  | 'ip';

export interface Machine {
  platform: NodeJS.Platform;
  isRoot: boolean;
  /** 'debian', 'ubuntu' (or a derivative), another os-release ID, or the platform off Linux. */
  distro: string;
  hasApt: boolean;
  hasBrew: boolean;
  /** Path of a Chromium that is only a snap stub. */
  chromiumStub?: string;
  /** Whether `sudo -n true` works; undefined = not asked yet. */
  sudo?: boolean;
  present: Record<ToolId, boolean>;
}

export interface Plan {
  install: Array<{ id: ToolId; pkg: string; why: string }>;
  skip: Array<{ id: ToolId; why: string }>;
  manager: 'apt' | 'brew' | null;
  commands: string[][];
  fail: null | { missing: ToolId[]; command: string };
}

export const MODES: Mode[];
export function plan(mode: string, machine: Machine): Plan;
export function probe(): Machine;
export function chromiumStatus(bin?: string): { present: boolean; stub?: string };
