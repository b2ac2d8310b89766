// A heart-rate model for simulated people, deterministic from a seed.
//
// Each person has a resting and a maximum heart rate, a fitness and an effort
// factor. The scenario gives a target intensity over time as a fraction of
// heart-rate reserve (Karvonen: target = rest + intensity * (max - rest)); the
// heart rate follows it with first-order lag (faster for fitter people, slower
// on the way down than up) plus slowly varying noise. Beats are generated one
// by one: each RR interval is 60000 / bpm with beat-to-beat variability that
// shrinks as intensity rises, so a notification at 1 Hz carries one beat at
// rest and two or three near the maximum. Energy expended accumulates
// (Keytel et al. 2005, kJ/min from heart rate, weight and age) and the battery
// drains linearly.
import { deriveSeed, gaussian, intBetween, mulberry32, uniform, type Rng } from './random.ts'
import { intensityAt, type Scenario } from './scenario.ts'

export interface Person {
  age: number
  weight_kg: number
  sex: 'male' | 'female'
  resting_bpm: number
  max_bpm: number
  /** 0 (untrained) .. 1 (athlete). */
  fitness: number
  /** Multiplies the scenario's intensity: some push harder than the instructor asks. */
  effort: number
  battery_start: number
  battery_drain_per_hour: number
}

/** One notification's worth of physiology, at `offset_ms` from the start. */
export interface Sample {
  offset_ms: number
  heart_rate: number
  /** Beats completed since the previous sample, oldest first, ms. */
  rr_intervals_ms: number[]
  energy_expended_kj: number
  battery_percent: number
  sensor_contact: boolean
  /** The scenario's intensity for this person at this time (0..1). */
  intensity: number
}

/** A simulated person drawn from the seed; index i gives a different person. */
export function makePerson (seed: number, index: number): Person {
  const rng = mulberry32(deriveSeed(seed, 'person', index))
  const fitness = rng()
  const age = intBetween(rng, 19, 62)
  const sex = rng() < 0.5 ? 'female' : 'male'
  // Tanaka et al. 2001: HRmax = 208 - 0.7 * age, with a few bpm of spread.
  const max = Math.round(208 - 0.7 * age + gaussian(rng) * 4)
  const resting = Math.round(72 - 22 * fitness + gaussian(rng) * 3)
  return {
    age,
    sex,
    weight_kg: Math.round(sex === 'male' ? uniform(rng, 62, 98) : uniform(rng, 50, 82)),
    resting_bpm: Math.max(40, Math.min(85, resting)),
    max_bpm: Math.max(150, Math.min(205, max)),
    fitness,
    effort: uniform(rng, 0.9, 1.1),
    battery_start: intBetween(rng, 55, 100),
    battery_drain_per_hour: uniform(rng, 2, 6)
  }
}

export interface HeartModelOptions {
  /** Milliseconds between samples (1000 / rate). */
  tick_ms: number
  /** Seed of this person's noise stream. */
  seed: number
}

export class HeartModel {
  private readonly rng: Rng
  private hr: number
  private noise = 0
  private offset = 0
  /** Time (ms, from the start) of the next beat. */
  private nextBeat: number
  private lastBeat: number
  private energyKj = 0

  constructor (readonly person: Person, readonly scenario: Scenario, readonly options: HeartModelOptions) {
    this.rng = mulberry32(options.seed)
    this.hr = this.targetAt(0)
    this.lastBeat = -this.interval(this.intensityAt(0)) * this.rng()
    this.nextBeat = this.lastBeat + this.interval(this.intensityAt(0))
  }

  /** The target intensity for this person at t seconds. */
  intensityAt (t: number): number {
    return Math.min(1, Math.max(0, intensityAt(this.scenario, t) * this.person.effort))
  }

  private targetAt (t: number): number {
    const p = this.person
    return p.resting_bpm + this.intensityAt(t) * (p.max_bpm - p.resting_bpm)
  }

  /** One RR interval in ms at the current rate: SDNN-like spread, larger at rest. */
  private interval (intensity: number): number {
    const spread = 0.012 + 0.05 * (1 - intensity) * (0.5 + this.person.fitness)
    const ms = (60000 / this.hr) * (1 + spread * gaussian(this.rng))
    return Math.min(2000, Math.max(250, ms))
  }

  /** Advances one tick and returns the sample at its end. */
  next (): Sample {
    const dt = this.options.tick_ms
    this.offset += dt
    const t = this.offset / 1000
    const intensity = this.intensityAt(t)
    const target = this.targetAt(t)
    // First-order lag: time constants in seconds.
    const tau = target > this.hr ? 28 - 14 * this.person.fitness : 50 - 25 * this.person.fitness
    this.hr += (target - this.hr) * (1 - Math.exp(-dt / 1000 / tau))
    // Slow AR(1) wander of a bpm or two.
    this.noise = 0.97 * this.noise + gaussian(this.rng) * 0.35
    this.hr = Math.min(this.person.max_bpm + 3, Math.max(this.person.resting_bpm - 8, this.hr))

    const rr: number[] = []
    while (this.nextBeat <= this.offset) {
      const ms = this.nextBeat - this.lastBeat
      rr.push(Math.round(ms))
      this.lastBeat = this.nextBeat
      this.nextBeat = this.lastBeat + this.interval(intensity)
    }
    const bpm = Math.round(this.hr + this.noise)

    // Keytel et al. 2005, kJ/min; never below a resting floor.
    const p = this.person
    const perMin = p.sex === 'male'
      ? -55.0969 + 0.6309 * bpm + 0.1988 * p.weight_kg + 0.2017 * p.age
      : -20.4022 + 0.4472 * bpm - 0.1263 * p.weight_kg + 0.074 * p.age
    this.energyKj += Math.max(4, perMin) * dt / 60000
    const battery = Math.max(0, Math.floor(p.battery_start - p.battery_drain_per_hour * this.offset / 3_600_000))

    return {
      offset_ms: this.offset,
      heart_rate: bpm,
      rr_intervals_ms: rr,
      energy_expended_kj: Math.min(65535, Math.floor(this.energyKj)),
      battery_percent: battery,
      sensor_contact: true,
      intensity
    }
  }
}

/** N samples for person `index` of `seed` under `scenario` (tests, previews). */
export function generateSamples (seed: number, index: number, scenario: Scenario, count: number, tickMs = 1000): Sample[] {
  const model = new HeartModel(makePerson(seed, index), scenario, { tick_ms: tickMs, seed: deriveSeed(seed, 'heart', index) })
  return Array.from({ length: count }, () => model.next())
}
