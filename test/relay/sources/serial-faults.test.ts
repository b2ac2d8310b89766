import t from 'tap'
import { rig } from './serial-recorder.ts'

t.test('framed: bad checksum, garbage, out of range and an over-long line are dropped by reason; the next line arrives', async t => {
  const { device, sink } = await rig(t, { format: 'framed' })
  await device.sendReading(70)
  await device.sendBadChecksum(71)
  await device.sendGarbage()
  await device.writeLine('$HR,400*' + '00')
  await device.sendOverlong(300)
  await device.sendReading(72, [833])
  await sink.waitFor('2 readings', () => sink.readings.length >= 2)
  t.same(sink.bpms(), [70, 72])
  t.same(sink.readings[1]?.rr_intervals_ms, [833])
  // $HR,400*00 has a wrong checksum too: checksum is checked before range.
  t.same(sink.drops, ['serial_bad_checksum', 'serial_garbage', 'serial_bad_checksum', 'serial_too_long'])
})

t.test('framed: a valid line with bpm out of range is dropped as serial_out_of_range', async t => {
  const { checksum } = await import('../../../firmware-protocol/serial.ts')
  const { device, sink } = await rig(t, { format: 'framed' })
  await device.writeLine(`$HR,400*${checksum('HR,400')}`)
  await device.sendReading(88)
  await sink.waitFor('1 reading', () => sink.readings.length >= 1)
  t.same(sink.bpms(), [88])
  t.same(sink.drops, ['serial_out_of_range'])
})

t.test('a device that never sends a newline: 64 KiB is one too_long drop, and the next good line arrives', async t => {
  const { device, sink } = await rig(t, { format: 'text', maxLineLength: 64 })
  for (let i = 0; i < 16; i++) await device.sendOverlong(4096, false)
  await device.writeRaw('\n')
  await device.sendReading(66)
  await sink.waitFor('1 reading', () => sink.readings.length >= 1)
  t.same(sink.bpms(), [66])
  t.same(sink.drops, ['serial_too_long'])
})

t.test('text: garbage and out-of-range values are dropped; hrmi: a garbage reply is dropped', async t => {
  const a = await rig(t, { format: 'text' })
  await a.device.writeLine('hello world')
  await a.device.writeLine('999')
  await a.device.writeLine('BPM: 71.5')
  await a.device.sendReading(77)
  await a.sink.waitFor('1 reading', () => a.sink.readings.length >= 1)
  t.same(a.sink.bpms(), [77])
  t.same(a.sink.drops, ['serial_garbage', 'serial_out_of_range', 'serial_out_of_range'])

  const b = await rig(t, { format: 'hrmi', pollIntervalMs: 60_000 })
  await b.device.waitForPolls(1)
  await b.device.writeRaw('0 1 7x\r')
  await b.device.writeRaw('0 2 81\r')
  await b.sink.waitFor('1 reading', () => b.sink.readings.length >= 1)
  t.same(b.sink.bpms(), [81])
  t.same(b.sink.drops, ['serial_garbage'])
})
