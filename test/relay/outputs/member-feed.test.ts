// Outputs follow a member named in the configuration: one created after the
// start gets their MIDI and OSC output without a restart.
import t, { type Test } from 'tap'
import { SerialPort } from 'serialport'
import { openPtyPair } from '../../../device-sim/serial/pty.ts'
import { startTestService } from '../../helpers/service.ts'
import { call } from '../../api/http/fetch.ts'
import { Hub } from '../../../api/hub.ts'
import type { StoredReading } from '../../../api/pipeline/reading.ts'
import type { UserRecord } from '../../../api/store/users.ts'
import { MemberFeed } from '../../../relay/outputs/member-feed.ts'
import { oscReceiver } from './osc-receiver.ts'

async function midiReceiver (t: Test, path: string): Promise<{ waitFor: (n: number) => Promise<number[]> }> {
  const port = new SerialPort({ path, baudRate: 31250, autoOpen: false })
  port.on('error', () => {})
  await new Promise<void>((resolve, reject) => port.open(err => err ? reject(err) : resolve()))
  t.teardown(() => new Promise<void>(resolve => port.isOpen ? port.close(() => resolve()) : resolve()))
  let got: number[] = []
  const waiters = new Set<() => void>()
  port.on('data', (chunk: Buffer) => { got = [...got, ...chunk]; for (const w of [...waiters]) w() })
  return {
    waitFor: n => new Promise(resolve => {
      const check = (): void => { if (got.length >= n) { waiters.delete(check); resolve(got.slice(0, n)) } }
      waiters.add(check)
      check()
    })
  }
}

t.test('a member created after the start gets their MIDI and OSC output without a restart', async t => {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const midi = await midiReceiver(t, pair.devicePath)
  const osc = await oscReceiver()
  t.teardown(() => osc.close())
  const s = await startTestService(t, {
    midi: [{ path: pair.relayPath, kind: 'serial', username: 'Late' }],
    osc: [{ host: '127.0.0.1', port: osc.port, username: 'Late' }]
  })
  const ids = [`midi:${pair.relayPath}`, `osc:127.0.0.1:${osc.port}`]
  const health = async (): Promise<unknown[]> => (await (await fetch(`${s.url}/health`)).json() as { sources: Array<{ id: string }> }).sources.filter(e => ids.includes(e.id))
  t.same(await health(), [
    { id: `midi:${pair.relayPath}`, state: 'unavailable', detail: 'no user Late' },
    { id: `osc:127.0.0.1:${osc.port}`, state: 'unavailable', detail: 'no user Late' }
  ])

  // Another member's reading is never sent; the late member's readings are.
  await s.user('early')
  const early = await s.token('early', 'data:heart_rate:write')
  const now = Date.now()
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: early, body: { measured_at: now, data: { heart_rate: 99 } } })).status, 200)
  await s.user('late')
  const late = await s.token('late', 'data:heart_rate:write')
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: late, body: { measured_at: now, data: { heart_rate: 67 } } })).status, 200)
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: late, body: { measured_at: now + 1000, data: { heart_rate: 120 } } })).status, 200)

  t.same(await midi.waitFor(6), [0x90, 0x07, 0x06, 0x90, 0x00, 0x0c], 'MIDI: 67 then 120, nothing for the other member')
  const got = await osc.waitFor(18)
  t.same(got.filter(m => m.address === '/avatar/parameters/HR').map(m => m.args), [[{ type: 'integer', value: 67 }], [{ type: 'integer', value: 120 }]], 'OSC: 67 then 120')
  t.match(await health(), [
    { id: `midi:${pair.relayPath}`, state: 'running' },
    { id: `osc:127.0.0.1:${osc.port}`, state: 'running' }
  ])
})

function reading (profileId: string, bpm: number): StoredReading {
  return { profile_id: profileId, heart_rate: bpm, measured_at: Date.now(), source: 'http' } as unknown as StoredReading
}

function lookup (users: UserRecord[], calls: string[]): { get: (id: string) => Promise<UserRecord | undefined>, byUsername: (name: string) => Promise<UserRecord | undefined> } {
  return {
    get: async id => { calls.push(`get ${id}`); return users.find(u => u.profile_id === id) },
    byUsername: async name => { calls.push(`byUsername ${name}`); return users.find(u => u.username.toLowerCase() === name.toLowerCase()) }
  }
}

t.test('MemberFeed: each other profile is looked up once; the member\'s first readings are held while looked up, in order', async t => {
  const hub = new Hub()
  const users: UserRecord[] = [{ profile_id: 'p-other', username: 'other' } as UserRecord]
  const calls: string[] = []
  const got: number[] = []
  const feed = new MemberFeed(hub, lookup(users, calls), 'Alice', r => { got.push(r.heart_rate) })
  await feed.start()
  t.equal(feed.profile, undefined)
  hub.publishReading(reading('p-other', 50))
  hub.publishReading(reading('p-other', 51))
  await new Promise(setImmediate)
  hub.publishReading(reading('p-other', 52))
  users.push({ profile_id: 'p-alice', username: 'alice' } as UserRecord)
  hub.publishReading(reading('p-alice', 70))
  hub.publishReading(reading('p-alice', 71))
  await new Promise(setImmediate)
  hub.publishReading(reading('p-alice', 72))
  t.same(got, [70, 71, 72])
  t.equal(feed.profile, 'p-alice')
  t.same(calls, ['byUsername Alice', 'get p-other', 'get p-alice'], 'one lookup per profile, none after the member is known')
  feed.stop()
  hub.publishReading(reading('p-alice', 73))
  t.same(got, [70, 71, 72], 'nothing after stop')
})
