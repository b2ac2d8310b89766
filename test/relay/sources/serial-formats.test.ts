import t from 'tap'
import { rig } from './serial-recorder.ts'
import { serialPathDeviceId } from '../../../relay/sources/serial.ts'
import { isValidDeviceId } from '../../../firmware-protocol/device-id.ts'
import type { TextVariant } from '../../../device-sim/serial/device.ts'

t.test('framed: the $ID line sets the device id; bpm and rr arrive exactly', async t => {
  const { device, source, sink, pair } = await rig(t, { format: 'framed' })
  t.equal(source.id, `serial:${pair.relayPath}`)
  t.equal(source.status().state, 'running')
  await device.sendIdentity('strap-01', '1.2.0')
  await device.sendReading(72, [830, 845])
  await device.sendReading(75)
  await device.sendReading(0)
  await sink.waitFor('3 readings', () => sink.readings.length >= 3)
  t.same(sink.readings.map(r => ({ d: r.device_id, s: r.source, hr: r.heart_rate, rr: r.rr_intervals_ms })), [
    { d: 'strap-01', s: 'serial', hr: 72, rr: [830, 845] },
    { d: 'strap-01', s: 'serial', hr: 75, rr: undefined },
    { d: 'strap-01', s: 'serial', hr: 0, rr: undefined }
  ])
  t.ok(sink.readings.every(r => typeof r.measured_at === 'number' && r.measured_at > 1_600_000_000_000))
  const sighting = sink.devices.find(d => d.device_id === 'strap-01')
  t.match(sighting, { source: 'serial', connected: true, name: /firmware 1\.2\.0/ })
  t.same(sink.drops, [])
})

t.test('serialPathDeviceId turns a path into a valid, pairable device id', async t => {
  t.equal(serialPathDeviceId('/dev/ttyUSB0'), 'dev_ttyUSB0')
  t.equal(serialPathDeviceId('/dev/serial/by-id/usb-FTDI_FT232R_A50285BI-if00-port0'), 'dev_serial_by-id_usb-FTDI_FT232R_A50285BI-if00-port0')
  t.equal(serialPathDeviceId('COM3'), 'COM3')
  t.equal(serialPathDeviceId('/'), 'serial')
  const long = serialPathDeviceId('/x/' + 'a'.repeat(100) + '/ttyACM0')
  t.equal(long.length, 64)
  t.ok(long.endsWith('_ttyACM0'))
  for (const id of ['dev_ttyUSB0', long]) t.ok(isValidDeviceId(id), id)
})

t.test('framed without $ID: the device id comes from the path; a configured id wins over $ID', async t => {
  const a = await rig(t, { format: 'framed' })
  await a.device.sendReading(64, [937])
  await a.sink.waitFor('1 reading', () => a.sink.readings.length >= 1)
  t.same(a.sink.readings.map(r => [r.device_id, r.heart_rate, r.rr_intervals_ms]), [[serialPathDeviceId(a.pair.relayPath), 64, [937]]])
  t.same(a.sink.devices.map(d => d.device_id), [serialPathDeviceId(a.pair.relayPath)])

  const b = await rig(t, { format: 'framed', deviceId: 'bench-strap' })
  await b.device.sendIdentity('strap-99', '2.0')
  await b.device.sendReading(101)
  await b.sink.waitFor('1 reading', () => b.sink.readings.length >= 1)
  t.same(b.sink.readings.map(r => [r.device_id, r.heart_rate]), [['bench-strap', 101]])
})

const variants: TextVariant[] = ['plain', 'keyed', 'csv', 'pulsesensor']
for (const textVariant of variants) {
  t.test(`text (${textVariant}): each bpm arrives once, no-value lines are not readings`, async t => {
    const { device, sink, pair } = await rig(t, { format: 'text' }, { textVariant })
    await device.sendReading(61, [983])
    await device.sendNoValue()
    await device.sendReading(72)
    await device.sendReading(180)
    await device.sendReading(99)
    await sink.waitFor('the last reading', () => sink.readings.some(r => r.heart_rate === 99))
    t.same(sink.bpms(), [61, 72, 180, 99])
    t.ok(sink.readings.every(r => r.device_id === serialPathDeviceId(pair.relayPath) && r.source === 'serial' && r.rr_intervals_ms === undefined))
    t.same(sink.drops, [], 'no-value and PulseSensor S/Q lines are not errors')
  })
}

t.test('hrmi: G1\\r polls are answered and each answer becomes a reading', async t => {
  const { device, sink } = await rig(t, { format: 'hrmi', pollIntervalMs: 50 }, { lineEnding: '\r' })
  // Empty history first: replies are "<status> <count>" only, which are no value.
  await device.waitForPolls(3)
  await device.sendReading(72)
  await sink.waitFor('a reading for 72', () => sink.readings.length >= 1)
  await device.sendReading(80)
  await sink.waitFor('a reading for 80', () => sink.readings.some(r => r.heart_rate === 80))
  const bpms = sink.bpms()
  t.equal(bpms[0], 72, 'no reading came from the empty replies')
  const firstEighty = bpms.indexOf(80)
  t.ok(bpms.slice(0, firstEighty).every(b => b === 72), 'only 72 before 80')
  t.same(sink.drops, [])
  t.equal(device.received.subarray(0, 9).toString('latin1'), 'G1\rG1\rG1\r', 'exact poll bytes')
})
