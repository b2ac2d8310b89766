import t, { type Test } from 'tap'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SerialPort } from 'serialport'
import { openPtyPair } from '../../../device-sim/serial/pty.ts'
import { MidiOutput, resolveMidiKind, type MidiOutputState } from '../../../relay/outputs/midi.ts'

/** The receiving end: a serialport on the other end of the pty, collecting bytes. */
async function receiver (t: Test, path: string): Promise<{ bytes: () => number[], waitFor: (n: number) => Promise<number[]> }> {
  const port = new SerialPort({ path, baudRate: 31250, autoOpen: false })
  port.on('error', () => {})
  await new Promise<void>((resolve, reject) => port.open(err => err ? reject(err) : resolve()))
  t.teardown(() => new Promise<void>(resolve => port.isOpen ? port.close(() => resolve()) : resolve()))
  let got: number[] = []
  const waiters: Array<() => void> = []
  port.on('data', (chunk: Buffer) => { got = [...got, ...chunk]; for (const w of [...waiters]) w() })
  return {
    bytes: () => got,
    waitFor: n => new Promise(resolve => {
      const check = (): void => { if (got.length >= n) { waiters.splice(waiters.indexOf(check), 1); resolve(got.slice(0, n)) } }
      waiters.push(check)
      check()
    })
  }
}

function waitState (out: MidiOutput, state: MidiOutputState): Promise<void> {
  if (out.status().state === state) return Promise.resolve()
  return new Promise(resolve => {
    const on = (s: { state: MidiOutputState }): void => { if (s.state === state) { out.off('status', on); resolve() } }
    out.on('status', on)
  })
}

t.test('kind auto: /dev/snd/* is rawmidi, anything else serial', async t => {
  t.equal(resolveMidiKind('/dev/snd/midiC1D0'), 'rawmidi')
  t.equal(resolveMidiKind('/dev/ttyUSB0'), 'serial')
  t.equal(resolveMidiKind('/dev/ttyUSB0', 'rawmidi'), 'rawmidi')
})

t.test('serial MIDI over a pty: 67 bpm is exactly 90 07 06; out-of-range values are skipped and counted', async t => {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const rx = await receiver(t, pair.devicePath)
  const out = new MidiOutput({ path: pair.relayPath })
  t.teardown(() => out.stop())
  await out.start(new AbortController().signal)
  t.equal(out.status().state, 'running')

  out.write(67)
  t.same(await rx.waitFor(3), [0x90, 0x07, 0x06])
  out.write(2000)
  out.write(-1)
  out.write(67.5)
  out.write(Number.NaN)
  out.write(120)
  t.same(await rx.waitFor(6), [0x90, 0x07, 0x06, 0x90, 0x00, 0x0c])
  await out.flush()
  t.match(out.status(), { written: 2, skipped_out_of_range: 4, dropped: 0 })
})

t.test('tens-ones order on channel 2', async t => {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const rx = await receiver(t, pair.devicePath)
  const out = new MidiOutput({ path: pair.relayPath, kind: 'serial', order: 'tens-ones', channel: 2 })
  t.teardown(() => out.stop())
  await out.start(new AbortController().signal)
  out.write(67)
  out.write(185)
  t.same(await rx.waitFor(6), [0x92, 0x06, 0x07, 0x92, 0x12, 0x05])
})

t.test('rawmidi: plain file writes, in order', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-midi-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'midiC0D0')
  await writeFile(file, '')
  const out = new MidiOutput({ path: file, kind: 'rawmidi' })
  t.teardown(() => out.stop())
  await out.start(new AbortController().signal)
  for (const bpm of [67, 68, 69]) out.write(bpm)
  await out.flush()
  t.same([...await readFile(file)], [0x90, 7, 6, 0x90, 8, 6, 0x90, 9, 6])
  t.match(out.status(), { state: 'running', written: 3 })
})

t.test('a missing path never crashes: degraded, writes dropped and counted, then it opens once the path exists', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-midi-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'midiC0D0')
  const out = new MidiOutput({ path: file, kind: 'rawmidi', reopen: { initialMs: 20, maxMs: 100 } })
  t.teardown(() => out.stop())
  await out.start(new AbortController().signal)
  t.match(out.status(), { state: 'degraded', detail: /cannot open/ })
  out.write(70)
  t.match(out.status(), { dropped: 1, written: 0 })
  await t.rejects(readFile(file), { code: 'ENOENT' }, 'the output never creates the device path')

  await writeFile(file, '')
  await waitState(out, 'running')
  out.write(71)
  await out.flush()
  t.same([...await readFile(file)], [0x90, 1, 7])
})

t.test('serial MIDI: unplug is noticed on the next write, the same path reopens after plugging back', async t => {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const out = new MidiOutput({ path: pair.relayPath, reopen: { initialMs: 20, maxMs: 100 } })
  t.teardown(() => out.stop())
  await out.start(new AbortController().signal)
  await pair.unplug()
  const degraded = waitState(out, 'degraded')
  out.write(70)
  await degraded
  await out.flush()
  t.equal(out.status().dropped, 1)
  await pair.plug()
  await waitState(out, 'running')
  const rx = await receiver(t, pair.devicePath)
  out.write(72)
  t.same(await rx.waitFor(3), [0x90, 2, 7])
})

t.test('stop() is idempotent, clears the reopen timer, and later writes are ignored', async t => {
  const before = process.getActiveResourcesInfo().filter(r => r === 'Timeout').length
  const out = new MidiOutput({ path: '/nonexistent/hr-relay-midi', kind: 'rawmidi', reopen: { initialMs: 60_000, maxMs: 60_000 } })
  const ac = new AbortController()
  await out.start(ac.signal)
  t.equal(out.status().state, 'degraded')
  ac.abort()
  await waitState(out, 'stopped')
  await out.stop()
  out.write(70)
  t.match(out.status(), { state: 'stopped', dropped: 0, written: 0 })
  t.equal(process.getActiveResourcesInfo().filter(r => r === 'Timeout').length, before)
  await t.rejects(out.start(ac.signal), /already started/)
})
