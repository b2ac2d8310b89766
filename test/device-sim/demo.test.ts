// `hr-relay start` with the demo on: readings arrive without any
// configuration, through the relay's own BLE source (BlueZ emulator on a
// private dbus-daemon), its serial sources (socat ptys), its ANT source (a
// simulated ANT stick on a socat pty) and the embedded MQTT broker; a restart
// on the same data directory reuses everything.
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually } from '../helpers/wait.ts'

const BIN = new URL('../../bin/hr-relay.cjs', import.meta.url).pathname

/** The environment of a new user: no D-Bus address of their own. */
function env (): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, HR_RELAY_FROM_SOURCE: '1' }
  delete e.DBUS_SYSTEM_BUS_ADDRESS
  return e
}

function start (dataDir: string): { child: ChildProcess, banner: Promise<{ token: string, url: string, text: string }> } {
  const child = spawn(process.execPath, [BIN, 'start', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: env() })
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

/**
 * The dbus-daemon and socat processes whose parent is `pid`: [pid, command name].
 * (Other children come and go: the load hook starts an esbuild service when its cache misses.)
 */
async function childrenOf (pid: number): Promise<Array<[number, string]>> {
  const out: Array<[number, string]> = []
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8')
      // pid (comm) state ppid ...
      const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat)
      if (m !== null && Number(m[2]) === pid && (m[1] === 'dbus-daemon' || m[1] === 'socat')) out.push([Number(name), m[1]])
    } catch { /* exited meanwhile */ }
  }
  return out
}

async function latest (url: string, token: string, after = 0): Promise<{ status: number, body: any }> {
  return await eventually(`a reading after ${after}`, async () => {
    const res = await fetch(`${url}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${token}` } })
    const body = await res.json() as any
    return res.status === 200 && body.measured_at > after ? { status: res.status, body } : undefined
  })
}

async function admin (url: string, dataDir: string, method: string, path: string, body?: unknown): Promise<any> {
  const token = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim()
  const res = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  if (res.status > 299) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return await res.json()
}

async function health (url: string): Promise<Array<{ id: string, state: string, connected?: number }>> {
  return ((await (await fetch(`${url}/health`)).json()) as { sources: Array<{ id: string, state: string, connected?: number }> }).sources
}

// Member → [transport, device id, pairing kind] on this machine (dbus-daemon and socat are installed, no BlueZ).
const EXPECTED: Array<[string, string, string]> = [
  ['demo-ana', 'ble', 'C7:E8:5E:ED:00:00'],
  ['demo-ben', 'ble', 'C7:E8:5E:ED:00:01'],
  ['demo-chloe', 'ble', 'C7:E8:5E:ED:00:02'],
  ['demo-dev', 'ble', 'C7:E8:5E:ED:00:03'],
  ['demo-eva', 'serial', 'demo-2024-serial-5'],
  ['demo-femi', 'serial', 'demo-2024-serial-6'],
  ['demo-gus', 'mqtt', 'demo-strap-7'],
  ['demo-hana', 'mqtt', 'demo-strap-8'],
  ['demo-ines', 'ant', 'ant:978945'],
  ['demo-jon', 'ant', 'ant:978946'],
  ['demo-kai', 'ant', 'ant:978947']
]

t.test('npm start: readings arrive over BLE, serial, ANT+ and MQTT, and a restart reuses the demo', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-relay-demo-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))

  const first = start(dataDir)
  t.teardown(() => stop(first.child))
  const b1 = await first.banner
  t.match(b1.text, /11 members in a spinning class, sending over BLE \(4\), serial \(2\), ANT\+ \(3\), MQTT \(2\)/)
  t.match(b1.text, /demo-ana +ble +BLE strap C7:E8:5E:ED:00:00 on the BlueZ emulator \(private D-Bus\)/)
  t.match(b1.text, /demo-eva +serial +serial framed sensor demo-2024-serial-5 on \/\S+\/relay/)
  t.match(b1.text, /demo-femi +serial +serial text sensor demo-2024-serial-6 on \/\S+\/relay/)
  t.match(b1.text, /demo-hana +mqtt +MQTT device demo-strap-8 to the embedded broker/)
  t.match(b1.text, /demo-ines +ant +ANT\+ strap ant:978945 on the simulated ANT stick \/\S+\/relay/)
  t.match(b1.text, /room display: +http:\/\/127\.0\.0\.1:\d+\/rooms\/[^/]+\/display\?display_id=/)

  const children = (await childrenOf(first.child.pid!)).map(([, name]) => name).sort()
  t.same(children, ['dbus-daemon', 'socat', 'socat', 'socat'], 'a private dbus-daemon, one socat per serial sensor and one for the ANT stick')

  // One reading per kind of path, each under its member: the demo token is demo-ana's (BLE).
  const ble = await latest(b1.url, b1.token)
  t.equal(ble.status, 200, 'a BLE member has a reading')
  t.ok(ble.body.data.heart_rate >= 40 && ble.body.data.heart_rate <= 210, `plausible bpm ${String(ble.body.data.heart_rate)}`)
  for (const username of ['demo-eva', 'demo-femi', 'demo-gus', 'demo-ines', 'demo-jon', 'demo-kai']) {
    const { access_token: token } = await admin(b1.url, dataDir, 'POST', '/admin/tokens', { username, scope: 'data:heart_rate:read' })
    const r = await latest(b1.url, token)
    t.equal(r.status, 200, `${username} has a reading`)
    t.type(r.body.data.heart_rate, 'number')
  }

  // Each device is paired with its kind, and its readings came through that source.
  const devices = await eventually('a reading from every device', async () => {
    const list = (await admin(b1.url, dataDir, 'GET', '/admin/devices')).devices as any[]
    return list.length === 11 && list.every(d => d.state?.last_reading !== undefined) ? list : undefined
  })
  t.same(devices.map(d => [d.username, d.kind, d.device_id]).sort(), EXPECTED.map(([u, k, id]) => [u, k, id]).sort(), 'eleven pairings, each with its kind')
  t.same(devices.map(d => [d.device_id, d.state.source]).sort(), EXPECTED.map(([, k, id]) => [id, k]).sort(), 'each reading arrived through its own source')

  const sources = await eventually('ble running with 4 straps connected', async () => {
    const s = await health(b1.url)
    return s.find(x => x.id === 'ble')?.state === 'running' && s.find(x => x.id === 'ble')?.connected === 4 ? s : undefined
  })
  const serial = sources.filter(s => s.id.startsWith('serial:'))
  t.equal(serial.length, 2, 'two serial sources')
  t.same(serial.map(s => [s.state, s.connected]), [['running', 1], ['running', 1]])
  t.same(sources.find(s => s.id === 'mqtt')?.connected, 2, 'two MQTT devices connected')
  const ant = await eventually('the ANT stick hearing 3 straps', async () => {
    const s = (await health(b1.url)).filter(x => x.id.startsWith('ant:'))
    return s.length === 1 && s[0]?.state === 'running' && s[0].connected === 3 ? s : undefined
  })
  t.match(ant, [{ id: /^ant:\/\S+\/relay$/, state: 'running', connected: 3 }], 'one ANT stick, running, hearing the three straps')
  // The ANT+ members are on the room display with the others.
  const room = JSON.parse(await readFile(join(dataDir, 'demo.json'), 'utf8')).room_id as string
  const roomMembers = (await admin(b1.url, dataDir, 'GET', `/admin/rooms/${room}`)).members as Array<{ username: string }>
  t.same(roomMembers.map(m => m.username).sort(), EXPECTED.map(([u]) => u).sort(), 'every member, the ANT+ ones included, is in the room')
  // The demo runs a class that starts with it (issue 43): the class engine's view of the room.
  const demoClass = await admin(b1.url, dataDir, 'GET', `/admin/rooms/${room}/class`)
  // Running, or showing its results when this machine took over three minutes to get here.
  t.match(demoClass, { room_id: room, name: 'Demo class', state: /^(running|results)$/ })
  t.equal(demoClass.planned_end - demoClass.started_at, 3 * 60_000, 'three minutes long')
  t.equal(demoClass.members.length, 11, 'with every member')

  const state1 = JSON.parse(await readFile(join(dataDir, 'demo.json'), 'utf8'))
  t.equal(state1.members.length, 11)
  const pids = (await childrenOf(first.child.pid!)).map(([pid]) => pid)
  await stop(first.child)
  t.same(pids.filter(pid => existsSync(`/proc/${pid}`)), [], 'dbus-daemon and socat stopped with the service')

  const second = start(dataDir)
  t.teardown(() => stop(second.child))
  const b2 = await second.banner
  t.equal(b2.token, b1.token, 'the same demo token after a restart')
  t.match(b2.text, /sending over BLE \(4\), serial \(2\), ANT\+ \(3\), MQTT \(2\)/)
  const state2 = JSON.parse(await readFile(join(dataDir, 'demo.json'), 'utf8'))
  t.same(state2.members.map((m: any) => m.profile_id), state1.members.map((m: any) => m.profile_id), 'the same members')
  t.equal(state2.room_id, state1.room_id, 'the same room')
  const again = (await admin(b2.url, dataDir, 'GET', '/admin/devices')).devices as any[]
  t.same(again.map(d => [d.device_id, d.kind, d.created_at]).sort(), devices.map(d => [d.device_id, d.kind, d.created_at]).sort(), 'the same strap addresses and serial ids: the pairings are reused, none created again')
  const r2 = await latest(b2.url, b2.token, ble.body.measured_at)
  t.ok(r2.body.measured_at > ble.body.measured_at, 'new BLE readings after the restart')
})

t.test('--no-demo starts with nothing simulated', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-relay-nodemo-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const child = spawn(process.execPath, [BIN, 'start', '--no-demo', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: env() })
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
  t.same(await childrenOf(child.pid!), [], 'no dbus-daemon, no socat')
  const url = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1]
  t.type(url, 'string')
  const sources = await health(url!)
  t.same(sources.filter(s => s.id.startsWith('serial:')), [], 'no serial sources')
  const ble = sources.find(s => s.id === 'ble')
  t.not(ble?.state, 'running', 'BLE is not running (no BlueZ here)')
  t.equal(ble?.connected, 0)
})
