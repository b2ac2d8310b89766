// The serial transport and its faults on real ptys (socat), read at the
// relay end with serialport and the protocol's own line parser.
import t from 'tap'
import { existsSync } from 'node:fs'
import { SerialPort } from 'serialport'
import { checksum, parseLine } from '../../firmware-protocol/serial.ts'
import { parseFaultFlag } from '../../device-sim/faults.ts'
import { Simulation, type SimEvent } from '../../device-sim/runner.ts'
import { loadScenario } from '../../device-sim/scenario.ts'
import { SerialTransport } from '../../device-sim/transports/serial.ts'

async function openRelayEnd (path: string): Promise<{ port: SerialPort, lines: string[], waitLines (n: number): Promise<void> }> {
  const port = new SerialPort({ path, baudRate: 115200, autoOpen: false })
  await new Promise<void>((resolve, reject) => port.open(err => err ? reject(err) : resolve()))
  const lines: string[] = []
  let buf = ''
  let waiter: { n: number, resolve: () => void } | null = null
  port.on('data', (chunk: Buffer) => {
    buf += chunk.toString('latin1')
    let nl
    while ((nl = buf.indexOf('\n')) >= 0) { lines.push(buf.slice(0, nl).replace(/\r$/, '')); buf = buf.slice(nl + 1) }
    if (waiter !== null && lines.length >= waiter.n) { waiter.resolve(); waiter = null }
  })
  port.on('error', () => {})
  return {
    port,
    lines,
    waitLines: n => new Promise((resolve, reject) => {
      if (lines.length >= n) { resolve(); return }
      const timer = setTimeout(() => reject(new Error(`only ${lines.length} of ${n} lines`)), 30_000)
      waiter = { n, resolve: () => { clearTimeout(timer); resolve() } }
    })
  }
}

t.test('framed: identity, readings, bad checksums, garbage, oversized lines and contact loss', async t => {
  const transport = new SerialTransport({ format: 'framed' })
  t.teardown(() => transport.close())
  const devices = [{ index: 0, device_id: 'bench-1', label: 'Ana' }]
  await transport.open(devices)
  const relay = await openRelayEnd(transport.relayPath(0)!)
  t.teardown(() => new Promise<void>(resolve => relay.port.isOpen ? relay.port.close(() => resolve()) : resolve()))
  t.match(transport.describe().join('\n'), /relay port .*relay/)

  const sim = new Simulation({
    transport, devices, rateHz: 1, durationS: 8, seed: 3, scenario: await loadScenario('hiit'), realtime: false,
    faults: [parseFaultFlag('bad_checksum', '3'), parseFaultFlag('garbage', '100@1'), parseFaultFlag('oversized', '100@2'), parseFaultFlag('contact_lost', '100/1@5')]
  })
  const sent: number[] = []
  sim.on('event', (ev: SimEvent) => { if (ev.type === 'reading') sent.push(ev.reading.heart_rate) })
  const stats = await sim.run()
  t.same(stats[0]!.faults, { bad_checksum: 2, garbage: 1, oversized: 1, contact_lost: 1 })
  // 1 identity + 8 readings + 2 bad checksums + 1 garbage + 1 oversized
  await relay.waitLines(13)
  const events = relay.lines.map(l => parseLine('framed', l))
  t.same(events[0], { kind: 'identity', device_id: 'bench-1', firmware_version: 'sim-1.0' })
  const readings = events.filter(e => e.kind === 'reading').map(e => (e as { heart_rate: number }).heart_rate)
  t.same(readings, sent, 'every reading arrives, in order')
  t.equal(readings[5], 0, 'contact lost at 5 s: 0 bpm')
  t.equal(events.filter(e => e.kind === 'error' && e.reason === 'bad_checksum').length, 2)
  for (const line of relay.lines.filter(l => parseLine('framed', l).kind === 'error' && (parseLine('framed', l) as { reason: string }).reason === 'bad_checksum')) {
    const m = /^\$(.*)\*([0-9A-F]{2})$/.exec(line)!
    t.not(m[2], checksum(m[1]!), `${line}: the checksum really is wrong`)
  }
  t.equal(events.filter(e => e.kind === 'error' && e.reason === 'garbage').length, 1)
  t.equal(events.filter(e => e.kind === 'error' && e.reason === 'too_long').length, 1, 'an oversized line')
})

t.test('unplug removes the relay-side port and plugs it back at the same path', async t => {
  const transport = new SerialTransport({ format: 'text', textVariant: 'keyed' })
  t.teardown(() => transport.close())
  const devices = [{ index: 0, device_id: 'bench-2', label: 'Ben' }]
  await transport.open(devices)
  const path = transport.relayPath(0)!
  t.equal(existsSync(path), true)
  t.equal(await transport.link(0, false, 'unplug'), 'injected')
  t.equal(existsSync(path), false, 'the port is gone while unplugged')
  t.equal(await transport.send(0, { measured_at: 1, heart_rate: 70, rr_intervals_ms: [], sensor_contact: true }), false, 'nothing is sent while unplugged')
  t.equal(await transport.link(0, true, 'unplug'), 'injected')
  t.equal(existsSync(path), true, 'back at the same path')
  const relay = await openRelayEnd(path)
  t.teardown(() => new Promise<void>(resolve => relay.port.isOpen ? relay.port.close(() => resolve()) : resolve()))
  t.equal(await transport.send(0, { measured_at: 1, heart_rate: 70, rr_intervals_ms: [], sensor_contact: true }), true)
  await relay.waitLines(1)
  t.same(relay.lines, ['BPM: 70'])
  t.same(parseLine('text', relay.lines[0]!), { kind: 'reading', heart_rate: 70 })
})
