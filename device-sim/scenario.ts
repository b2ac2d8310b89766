// Scenario files: what simulated people do over time (phases of intensity)
// and which faults their devices show. The schema is
// scenarios/scenario.schema.json; this file loads, validates and evaluates
// them. Intensities are fractions of heart-rate reserve (Karvonen).
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv } from 'ajv'
import { SimError } from './errors.ts'

export type PhaseKind = 'warmup' | 'steady' | 'intervals' | 'recovery' | 'rest'
export type FaultKind = 'drop' | 'contact_lost' | 'garbage' | 'bad_checksum' | 'oversized' | 'unplug' | 'skew' | 'burst'
export const FAULT_KINDS: readonly FaultKind[] = ['drop', 'contact_lost', 'garbage', 'bad_checksum', 'oversized', 'unplug', 'skew', 'burst']

export interface Phase {
  kind: PhaseKind
  label?: string
  duration_s: number
  intensity?: number
  from?: number
  work?: number
  rest?: number
  work_s?: number
  rest_s?: number
}

export interface FaultSpec {
  kind: FaultKind
  at_s?: number
  every_s?: number
  duration_s?: number
  count?: number
  skew_ms?: number
  devices?: number[]
}

export interface Scenario {
  name: string
  description?: string
  loop?: boolean
  phases: Phase[]
  faults?: FaultSpec[]
}

export const SCENARIO_DIR = join(dirname(fileURLToPath(import.meta.url)), 'scenarios')
const SCHEMA: object = JSON.parse(readFileSync(join(SCENARIO_DIR, 'scenario.schema.json'), 'utf8'))
const validate = new Ajv({ allErrors: true, useDefaults: false }).compile(SCHEMA)

/** Validates a parsed scenario; throws SimError('bad_scenario') listing every error by path. */
export function parseScenario (value: unknown, origin = 'scenario'): Scenario {
  if (!validate(value)) {
    const errors = (validate.errors ?? []).map(e => `${e.instancePath === '' ? '/' : e.instancePath} ${e.message ?? 'is invalid'}`)
    throw new SimError('bad_scenario', `${origin}: ${errors.join('; ')}`)
  }
  const scenario = value as Scenario
  for (const [i, p] of scenario.phases.entries()) {
    if (p.kind === 'intervals' && (p.work_s === undefined || p.rest_s === undefined || p.work === undefined || p.rest === undefined)) {
      throw new SimError('bad_scenario', `${origin}: /phases/${i} intervals need work, rest, work_s and rest_s`)
    }
    if (p.kind !== 'intervals' && p.intensity === undefined) {
      throw new SimError('bad_scenario', `${origin}: /phases/${i} ${p.kind} needs intensity`)
    }
  }
  for (const [i, f] of (scenario.faults ?? []).entries()) {
    if (f.kind === 'skew' && f.skew_ms === undefined) throw new SimError('bad_scenario', `${origin}: /faults/${i} skew needs skew_ms`)
  }
  return scenario
}

/** The names of the bundled scenarios (files in device-sim/scenarios/ without .json). */
export const BUNDLED_SCENARIOS = ['spinning-class', 'hiit', 'rest'] as const

/** Loads a bundled scenario by name, or a scenario file by path. */
export async function loadScenario (nameOrPath: string): Promise<Scenario> {
  const path = (BUNDLED_SCENARIOS as readonly string[]).includes(nameOrPath) ? join(SCENARIO_DIR, `${nameOrPath}.json`) : nameOrPath
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw new SimError('bad_scenario', `cannot read ${path}: ${(err as Error).message}`, { cause: err })
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new SimError('bad_scenario', `${path} is not JSON: ${(err as Error).message}`, { cause: err })
  }
  return parseScenario(value, path)
}

export function scenarioDuration (s: Scenario): number {
  return s.phases.reduce((sum, p) => sum + p.duration_s, 0)
}

/**
 * The target intensity (0..1 of heart-rate reserve) at `t` seconds from the
 * start. Ramps are linear; intervals alternate work and rest from the start
 * of the phase. Past the end: loop, or hold the last phase's end level.
 */
export function intensityAt (s: Scenario, t: number): number {
  const total = scenarioDuration(s)
  let at = t
  if (at >= total) {
    if (s.loop === true) at = at % total
    else return endLevel(s.phases, s.phases.length - 1)
  }
  let start = 0
  for (const [i, p] of s.phases.entries()) {
    if (at < start + p.duration_s) return levelIn(s.phases, i, at - start)
    start += p.duration_s
  }
  return endLevel(s.phases, s.phases.length - 1)
}

function levelIn (phases: Phase[], i: number, into: number): number {
  const p = phases[i] as Phase
  switch (p.kind) {
    case 'intervals': {
      const cycle = (p.work_s ?? 1) + (p.rest_s ?? 1)
      return (into % cycle) < (p.work_s ?? 1) ? (p.work ?? 0) : (p.rest ?? 0)
    }
    case 'warmup': case 'recovery': {
      const from = p.from ?? (i > 0 ? endLevel(phases, i - 1) : 0)
      return from + ((p.intensity ?? 0) - from) * Math.min(1, into / p.duration_s)
    }
    default: return p.intensity ?? 0
  }
}

function endLevel (phases: Phase[], i: number): number {
  const p = phases[i]
  if (p === undefined) return 0
  if (p.kind === 'intervals') return p.rest ?? 0
  return p.intensity ?? 0
}
