// The environment the installed box runs hr-relay with: the Environment=
// lines of deploy/hr-relay.service (MALLOC_ARENA_MAX=2, NODE_OPTIONS). The footprint and
// pi-profile scenarios start their server with it, so they measure the
// process as systemd runs it.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ROOT } from './server.ts'

/** Environment= assignments of a unit file's [Service] section (later lines win; quotes removed). */
export function unitEnvironment (unit: string): Record<string, string> {
  const env: Record<string, string> = {}
  let section = ''
  for (const raw of unit.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const head = /^\[(.+)\]$/.exec(line)
    if (head !== null) { section = head[1] ?? ''; continue }
    if (section !== 'Service' || !line.startsWith('Environment=')) continue
    for (const m of line.slice('Environment='.length).matchAll(/"([^"]*)"|(\S+)/g)) {
      const word = m[1] ?? m[2] ?? ''
      const eq = word.indexOf('=')
      if (eq > 0) env[word.slice(0, eq)] = word.slice(eq + 1)
    }
  }
  return env
}

export async function serviceEnvironment (): Promise<Record<string, string>> {
  return unitEnvironment(await readFile(join(ROOT, 'deploy/hr-relay.service'), 'utf8'))
}
