// Runs autocannon in its own process (its CLI, JSON output) against a URL.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { BenchFailure } from './errors.ts'
import { ROOT } from './server.ts'

export interface CannonResult {
  requestsPerSecond: number
  latencyP50: number
  latencyP99: number
  total: number
  non2xx: number
  errors: number
  timeouts: number
}

export async function autocannon (url: string, o: { connections: number, durationS: number, headers?: Record<string, string> }): Promise<CannonResult> {
  const args = [join(ROOT, 'node_modules/autocannon/autocannon.js'), '-c', String(o.connections), '-d', String(o.durationS), '-p', '1', '-j']
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push('-H', `${k}=${v}`)
  args.push(url)
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''; let err = ''
  child.stdout.on('data', (c: Buffer) => { out += c.toString('utf8') })
  child.stderr.on('data', (c: Buffer) => { err = (err + c.toString('utf8')).slice(-2000) })
  const code = await new Promise<number | null>(resolve => { child.once('exit', resolve) })
  if (code !== 0) throw new BenchFailure(`autocannon exited with ${code}: ${err}`)
  const r = JSON.parse(out)
  return {
    requestsPerSecond: r.requests.average,
    latencyP50: r.latency.p50,
    latencyP99: r.latency.p99,
    total: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts
  }
}
