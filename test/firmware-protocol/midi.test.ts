import t from 'tap'
import { encodeMidiHeartRate, decodeMidiHeartRate, MAX_MIDI_BPM } from '../../firmware-protocol/midi.ts'
import { hex, toHex, code } from '../helpers/bytes.ts'

t.test('spec 4.8 example: 67 bpm is 90 07 06 (ones, then tens)', async (t) => {
  t.equal(toHex(encodeMidiHeartRate(67)), '90 07 06')
  t.equal(decodeMidiHeartRate(hex('90 07 06')), 67)
  t.equal(toHex(encodeMidiHeartRate(67, { order: 'ones-tens' })), '90 07 06')
})

t.test('tens-ones order and channels', async (t) => {
  t.equal(toHex(encodeMidiHeartRate(67, { order: 'tens-ones' })), '90 06 07')
  t.equal(decodeMidiHeartRate(hex('90 06 07'), { order: 'tens-ones' }), 67)
  t.equal(toHex(encodeMidiHeartRate(120, { channel: 15 })), '9f 00 0c')
  t.equal(decodeMidiHeartRate(hex('9f 00 0c')), 120)
  t.equal(toHex(encodeMidiHeartRate(230)), '90 00 17')
  t.equal(toHex(encodeMidiHeartRate(30)), '90 00 03')
  t.equal(toHex(encodeMidiHeartRate(0)), '90 00 00')
  t.equal(toHex(encodeMidiHeartRate(1279)), '90 09 7f')
  t.equal(MAX_MIDI_BPM, 1279)
})

t.test('encode rejects what does not fit', async (t) => {
  t.equal(code(() => encodeMidiHeartRate(1280)), 'out_of_range')
  t.equal(code(() => encodeMidiHeartRate(-1)), 'out_of_range')
  t.equal(code(() => encodeMidiHeartRate(72.5)), 'out_of_range')
  t.equal(code(() => encodeMidiHeartRate(Number.NaN)), 'out_of_range')
  t.equal(code(() => encodeMidiHeartRate(72, { channel: 16 })), 'out_of_range')
  t.equal(code(() => encodeMidiHeartRate(72, { order: 'sideways' as 'ones-tens' })), 'out_of_range')
})

t.test('decode rejects malformed messages', async (t) => {
  t.equal(code(() => decodeMidiHeartRate(hex(''))), 'truncated')
  t.equal(code(() => decodeMidiHeartRate(hex('90 07'))), 'truncated')
  t.equal(code(() => decodeMidiHeartRate(hex('90 07 06 00'))), 'too_long')
  t.equal(code(() => decodeMidiHeartRate(hex('80 07 06'))), 'garbage') // Note Off
  t.equal(code(() => decodeMidiHeartRate(hex('b0 07 06'))), 'garbage') // Control Change
  t.equal(code(() => decodeMidiHeartRate(hex('90 80 06'))), 'out_of_range')
  t.equal(code(() => decodeMidiHeartRate(hex('90 07 86'))), 'out_of_range')
  // 120 bpm sent tens-first but read ones-first: ones byte 12 > 9 is caught.
  t.equal(code(() => decodeMidiHeartRate(hex('90 0c 00'))), 'out_of_range')
})

t.test('round trip of every bpm in both orders', async (t) => {
  let ok = 0
  for (const order of ['ones-tens', 'tens-ones'] as const) {
    for (let bpm = 0; bpm <= MAX_MIDI_BPM; bpm++) {
      if (decodeMidiHeartRate(encodeMidiHeartRate(bpm, { order }), { order }) === bpm) ok++
    }
  }
  t.equal(ok, 2 * 1280)
})
