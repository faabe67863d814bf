/**
 * The simulation's randomness: every random choice of a run comes from its seed, through streams
 * forked from one generator (sfc32), so that a choice added to one part of the world (a fault kind,
 * a workload) does not shift the draws of the others.
 */
export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, salt = 0) {
    this.a = 0x9e3779b9 ^ salt;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162 ^ Math.imul(salt, 0x85ebca6b);
    this.d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.next32();
  }

  /** A uniform 32-bit unsigned integer. */
  next32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** A uniform number in [0, 1). */
  next(): number {
    return this.next32() / 4294967296;
  }

  /**
   * The stream named `name` of `seed`: the same for the same seed and name, whatever else was
   * drawn (adding a part to the world does not shift the draws of the others).
   */
  static stream(seed: number, name: string): Random {
    const h = seedOf(name);
    return new Random(seed ^ h, h);
  }

  /** Uniform in [min, max). */
  between(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  /** A uniform integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** An exponentially distributed wait with this mean (a Poisson process's gaps). */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }

  /** `bytes` random bytes as base64url text. */
  text(bytes: number): string {
    const out = new Uint8Array(bytes);
    for (let i = 0; i < bytes; i++) out[i] = this.next32() & 0xff;
    return Buffer.from(out).toString('base64url');
  }
}

/** A 32-bit seed from text (a commit id, a name): FNV-1a. */
export function seedOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
