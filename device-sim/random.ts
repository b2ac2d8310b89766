// A small seeded PRNG so every simulated reading is reproducible from --seed.
// mulberry32 (Tommy Ettinger's 32-bit generator): one 32-bit state word,
// period 2^32, good enough statistical quality for simulated physiology.
// Not for anything secret.

/** A generator of floats in [0, 1). */
export type Rng = () => number

export function mulberry32 (seed: number): Rng {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * A 32-bit seed derived from parts (FNV-1a over their text), so each
 * simulated person and each concern (physiology, faults) gets its own
 * independent stream: `mulberry32(deriveSeed(seed, 'person', 3))`.
 */
export function deriveSeed (...parts: Array<number | string>): number {
  let h = 0x811c9dc5
  const text = parts.map(String).join('\u0000')
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}

/** A standard normal deviate (Box-Muller; uses two draws). */
export function gaussian (rng: Rng): number {
  const u = 1 - rng() // (0, 1]
  const v = rng()
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
}

/** A float uniformly in [min, max). */
export function uniform (rng: Rng, min: number, max: number): number {
  return min + (max - min) * rng()
}

/** An integer uniformly in [min, max]. */
export function intBetween (rng: Rng, min: number, max: number): number {
  return min + Math.floor(rng() * (max - min + 1))
}
