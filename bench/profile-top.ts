/**
 * Reads a `.cpuprofile` (from `node --cpu-prof`) and prints the top self-time frames, then self
 * time summed per source file: `node bench/dist/profile-top.js <file.cpuprofile> [top=10]`.
 * Self time is the time a sample was taken in the frame itself, not in what it called: the
 * figure that says where the CPU goes. Given a `.heapprofile` (from `profile.js --alloc`), it
 * prints the bytes allocated per frame and per file the same way.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
  };
}

/** A node of a sampling heap profile: bytes sampled in this frame itself, and its callees. */
interface HeapNode {
  readonly callFrame: ProfileNode['callFrame'];
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** A path short enough for a table: from the package or repository folder on. */
function shortUrl(url: string): string {
  if (url === '') return '';
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('node_modules/');
  if (nm >= 0) return path.slice(nm + 'node_modules/'.length);
  const dist = path.search(/\/(dist|lib)\//);
  return dist >= 0 ? path.slice(dist + 1) : path;
}

function main(): void {
  const [file, topArg = '10'] = process.argv.slice(2);
  if (!file) throw new Error('usage: profile-top.js <file.cpuprofile> [top]');
  const top = Number(topArg);
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Profile | { head: HeapNode };
  if ('head' in parsed) {
    allocations(file, parsed.head, top);
    return;
  }
  const profile = parsed;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time from sample i - 1 to sample i: charge it to sample i's frame.
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

  const frames = new Map<string, number>();
  const files = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const where = shortUrl(url);
    const frame = `${functionName || '(anonymous)'} ${where ? `${where}:${lineNumber + 1}` : ''}`.trim();
    frames.set(frame, (frames.get(frame) ?? 0) + us);
    const group = where || functionName;
    files.set(group, (files.get(group) ?? 0) + us);
  }
  const print = (title: string, entries: Map<string, number>, n: number) => {
    console.log(`\n${title}`);
    for (const [name, us] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, n)) {
      console.log(
        `  ${((us / total) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`,
      );
    }
  };
  console.log(
    `${file}: ${(total / 1000).toFixed(0)} ms busy (${(idle / 1000).toFixed(0)} ms idle not counted)`,
  );
  print(`top ${top} self-time frames`, frames, top);
  print('self time per file', files, top + 5);
}

/** Bytes allocated per frame and per file, from a sampling heap profile. */
function allocations(file: string, head: HeapNode, top: number): void {
  const frames = new Map<string, number>();
  const files = new Map<string, number>();
  let total = 0;
  const visit = (node: HeapNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    if (node.selfSize > 0) {
      total += node.selfSize;
      const where = shortUrl(url);
      const frame = `${functionName || '(anonymous)'} ${where ? `${where}:${lineNumber + 1}` : ''}`.trim();
      frames.set(frame, (frames.get(frame) ?? 0) + node.selfSize);
      const group = where || functionName;
      files.set(group, (files.get(group) ?? 0) + node.selfSize);
    }
    node.children.forEach(visit);
  };
  visit(head);
  const print = (title: string, entries: Map<string, number>, n: number) => {
    console.log(`\n${title}`);
    for (const [name, bytes] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, n)) {
      console.log(
        `  ${((bytes / total) * 100).toFixed(1).padStart(5)} %  ${(bytes / 1e6).toFixed(1).padStart(7)} MB  ${name}`,
      );
    }
  };
  console.log(`${file}: ${(total / 1e6).toFixed(1)} MB allocated (sampled)`);
  print(`top ${top} allocating frames`, frames, top);
  print('allocated per file', files, top + 5);
}

main();
