// What a scenario is: a name, its reference in words, how many provisioned
// devices it needs, and run(), which returns its figures.
import type { Figure } from './results.ts'

export interface Context {
  quick: boolean
  log (line: string): void
  /** When set, the hr-relay server writes a CPU profile here (the --profile run). */
  cpuProfileDir?: string
}

export interface Outcome {
  figures: Figure[]
  lost: number
  notes: string[]
}

export interface Scenario {
  name: string
  reference: string
  /** Users with a paired MQTT device this scenario needs from the shared fleet. */
  fleetSize? (quick: boolean): number
  run (ctx: Context): Promise<Outcome>
}

/** Sleeps without keeping the process alive past the end of a run. */
export function sleep (ms: number): Promise<void> {
  return new Promise(resolve => { setTimeout(resolve, ms) })
}

export function wsUrl (httpUrl: string, path: string): string {
  return httpUrl.replace(/^http/, 'ws') + path
}
