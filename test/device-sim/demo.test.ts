// `hr-relay start` with the demo on: readings arrive without any
// configuration, and a restart on the same data directory reuses everything.
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const BIN = new URL('../../bin/hr-relay.js', import.meta.url).pathname

function start (dataDir: string): { child: ChildProcess, banner: Promise<{ token: string, url: string, text: string }> } {
  const child = spawn(process.execPath, [BIN, 'start', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HR_RELAY_FROM_SOURCE: '1' } })
  let out = ''
  const banner = new Promise<{ token: string, url: string, text: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no demo banner in 60 s: ${out.slice(-2000)}`)), 60_000)
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString()
      const token = /demo token: +([0-9a-f-]{36})/.exec(out)
      const curl = /latest reading: curl .* (http:\/\/127\.0\.0\.1:\d+)\/api\/v1\/data\/heart_rate\/latest/.exec(out)
      if (token !== null && curl !== null) { clearTimeout(timer); resolve({ token: token[1]!, url: curl[1]!, text: out }) }
    })
    child.once('exit', code => { clearTimeout(timer); reject(new Error(`exited ${String(code)}: ${out.slice(-2000)}`)) })
  })
  child.stderr!.resume()
  return { child, banner }
}

async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  await exited
}

async function firstReading (url: string, token: string, after = 0): Promise<{ status: number, body: any }> {
  const deadline = Date.now() + 30_000
  let last = { status: 0, body: null as any }
  while (Date.now() < deadline) {
    const res = await fetch(`${url}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${token}` } })
    last = { status: res.status, body: await res.json() }
    if (res.status === 200 && last.body.measured_at > after) return last
    await new Promise(resolve => setTimeout(resolve, 500))
  }
  return last
}

t.test('npm start: readings arrive within seconds, and a restart reuses the demo', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-relay-demo-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))

  const first = start(dataDir)
  t.teardown(() => stop(first.child))
  const b1 = await first.banner
  t.match(b1.text, /8 members in a spinning class, sending over MQTT to the embedded broker/, 'the broker is wired, so the demo uses MQTT')
  t.match(b1.text, /room display: +http:\/\/127\.0\.0\.1:\d+\/rooms\/[^/]+\/display\?display_id=/)
  const r1 = await firstReading(b1.url, b1.token)
  t.equal(r1.status, 200, 'a reading arrived')
  t.type(r1.body.measured_at, 'number')
  t.ok(r1.body.data.heart_rate >= 40 && r1.body.data.heart_rate <= 210, `plausible bpm ${String(r1.body.data.heart_rate)}`)
  const state1 = JSON.parse(await readFile(join(dataDir, 'demo.json'), 'utf8'))
  t.equal(state1.members.length, 8)
  await stop(first.child)

  const second = start(dataDir)
  t.teardown(() => stop(second.child))
  const b2 = await second.banner
  t.equal(b2.token, b1.token, 'the same demo token after a restart')
  const state2 = JSON.parse(await readFile(join(dataDir, 'demo.json'), 'utf8'))
  t.same(state2.members.map((m: any) => m.profile_id), state1.members.map((m: any) => m.profile_id), 'the same members')
  t.equal(state2.room_id, state1.room_id, 'the same room')
  const r2 = await firstReading(b2.url, b2.token, r1.body.measured_at)
  t.equal(r2.status, 200)
  t.ok(r2.body.measured_at > r1.body.measured_at, 'new readings after the restart')
})

t.test('--no-demo starts with nothing simulated', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-relay-nodemo-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const child = spawn(process.execPath, [BIN, 'start', '--no-demo', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HR_RELAY_FROM_SOURCE: '1' } })
  t.teardown(() => stop(child))
  let out = ''
  child.stdout!.on('data', (c: Buffer) => { out += c.toString() })
  child.stderr!.resume()
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(out)), 60_000)
    const check = setInterval(() => { if (out.includes('hr-relay ready')) { clearInterval(check); clearTimeout(timer); resolve() } }, 100)
  })
  t.notMatch(out, /demo token/)
  await t.rejects(readFile(join(dataDir, 'demo.json')), { code: 'ENOENT' }, 'no demo state written')
})
