// The environment the installed box runs hr-relay with: the Environment=
// lines of deploy/hr-relay.service (MALLOC_ARENA_MAX=2, NODE_OPTIONS) and its
// Nice=. The footprint and pi-profile scenarios start their server with the
// environment, and e2e-latency measures a contention window at the unit's
// nice value, so they measure the process as systemd runs it.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ROOT } from './server.ts'

/** The values of a unit file's `key=` lines in its [Service] section, in order. */
function serviceValues (unit: string, key: string): string[] {
  const values: string[] = []
  let section = ''
  for (const raw of unit.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const head = /^\[(.+)\]$/.exec(line)
    if (head !== null) { section = head[1] ?? ''; continue }
    if (section === 'Service' && line.startsWith(`${key}=`)) values.push(line.slice(key.length + 1))
  }
  return values
}

/** Adds the space-separated `KEY=value` assignments of one Environment= value to `env` (quotes removed; later ones win). */
export function environmentAssignments (value: string, env: Record<string, string> = {}): Record<string, string> {
  for (const m of value.matchAll(/"([^"]*)"|(\S+)/g)) {
    const word = m[1] ?? m[2] ?? ''
    const eq = word.indexOf('=')
    if (eq > 0) env[word.slice(0, eq)] = word.slice(eq + 1)
  }
  return env
}

/** Environment= assignments of a unit file's [Service] section (later lines win; quotes removed). */
export function unitEnvironment (unit: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const value of serviceValues(unit, 'Environment')) environmentAssignments(value, env)
  return env
}

/** The Nice= of a unit file's [Service] section (the last one), or undefined when it sets none or not a nice value. */
export function unitNice (unit: string): number | undefined {
  const value = serviceValues(unit, 'Nice').at(-1)
  const nice = value === undefined || value.trim() === '' ? NaN : Number(value)
  return Number.isInteger(nice) && nice >= -20 && nice <= 19 ? nice : undefined
}

export async function serviceEnvironment (): Promise<Record<string, string>> {
  return unitEnvironment(await readFile(join(ROOT, 'deploy/hr-relay.service'), 'utf8'))
}

export async function serviceNice (): Promise<number | undefined> {
  return unitNice(await readFile(join(ROOT, 'deploy/hr-relay.service'), 'utf8'))
}
