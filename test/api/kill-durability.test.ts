// Acknowledged readings survive kill -9: spawn the server, write readings
// until each has its HTTP 200, SIGKILL it right after the last 200, restart on
// the same data directory and find every acknowledged reading. (A power cut,
// which also loses what the kernel had not written to disk, is simulated in
// test/api/store/power-cut.test.ts.)
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

async function startServer (dataDir: string, previousPid?: number): Promise<{ child: ChildProcess, url: string, admin: string, output: () => string }> {
  // The per-token rate limit (default 20/s) is turned off: this test writes in bursts.
  const configFile = join(dataDir, '..', `${dataDir.split('/').pop() ?? 'x'}.config.json`)
  await writeFile(configFile, JSON.stringify({ http: { rate_limit_per_second: 0 } }))
  const child = spawn(process.execPath, ['bin/hr-relay.cjs', 'start', '--config', configFile, '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0', '--no-demo'], {
    env: { ...process.env, HR_RELAY_FROM_SOURCE: '1' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout?.on('data', (c: Buffer) => { output += c.toString() })
  child.stderr?.on('data', (c: Buffer) => { output += c.toString() })
  const exited = new Promise<never>((_resolve, reject) => { child.once('exit', code => { reject(new Error(`server exited (${code}): ${output}`)) }) })
  const ready = (async () => {
    for (;;) {
      try {
        const info = JSON.parse(await readFile(join(dataDir, 'server.json'), 'utf8')) as { url: string, pid: number }
        if (info.pid === child.pid && info.pid !== previousPid) return info
      } catch { /* not yet written */ }
      await new Promise(resolve => setTimeout(resolve, 50))
    }
  })()
  const info = await Promise.race([ready, exited])
  const admin = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim()
  return { child, url: info.url, admin, output: () => output }
}

async function adminCall (url: string, admin: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) })
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return await res.json()
}

t.test('every acknowledged reading survives SIGKILL', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-kill-'))
  const children: ChildProcess[] = []
  t.teardown(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
    await rm(dataDir, { recursive: true, force: true })
    await rm(`${dataDir}.config.json`, { force: true })
  })

  const first = await startServer(dataDir)
  children.push(first.child)
  await adminCall(first.url, first.admin, 'POST', '/admin/users', { username: 'alice', password: 'password123' })
  const { access_token: token } = await adminCall(first.url, first.admin, 'POST', '/admin/tokens', { username: 'alice', scope: 'data:heart_rate:write data:statistics:read' })

  const groups = async (): Promise<number> => {
    const m = /^hr_relay_reading_groups_total (\d+)$/m.exec(await (await fetch(`${first.url}/metrics`)).text())
    return Number(m?.[1])
  }

  const start = Date.now() - 120_000
  const acknowledged: number[] = []
  const post = async (i: number): Promise<void> => {
    const res = await fetch(`${first.url}/api/v1/data`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ measured_at: start + i * 1000, data: { heart_rate: 60 + (i % 50) } }) })
    await res.arrayBuffer()
    if (res.status === 200) acknowledged.push(start + i * 1000)
  }
  // 40 one after another, then 60 in concurrent bursts of 20 (grouped writes).
  for (let i = 0; i < 40; i++) await post(i)
  t.equal(await groups(), 40, 'one group (one sync batch) for each of the 40 writes one after another (/metrics)')
  for (let b = 0; b < 3; b++) await Promise.all(Array.from({ length: 20 }, async (_, j) => { await post(40 + b * 20 + j) }))
  const killed = new Promise(resolve => first.child.once('exit', resolve))
  first.child.kill('SIGKILL')
  await killed
  t.equal(acknowledged.length, 100, 'all 100 writes acknowledged before the kill')

  const second = await startServer(dataDir, first.child.pid)
  children.push(second.child)
  const stored = await adminCall(second.url, second.admin, 'GET', '/admin/readings/alice')
  const times = new Set((stored.readings as Array<{ measured_at: number }>).map(r => r.measured_at))
  t.equal(acknowledged.filter(x => !times.has(x)).length, 0, 'no acknowledged reading is missing')
  t.equal(stored.readings.length, 100)
  const stats = await (await fetch(`${second.url}/api/v1/statistics`, { headers: { authorization: `Bearer ${token}` } })).json() as { streamed_duration_in_seconds: number, maximum_beats_per_minute: number }
  t.equal(stats.streamed_duration_in_seconds, 99, 'rollups were written with the readings')
  t.equal(stats.maximum_beats_per_minute, 109)
  second.child.kill('SIGTERM')
  await new Promise(resolve => second.child.once('exit', resolve))
})
