import t from 'tap'
import {
  parseLine, checksum, encodeFramedReading, encodeIdentity, hrmiPollCommand, MAX_LINE_LENGTH
} from '../../firmware-protocol/serial.ts'
import { code } from '../helpers/bytes.ts'

t.test('checksum is the XOR of the body bytes as two uppercase hex digits', async (t) => {
  t.equal(checksum(''), '00')
  t.equal(checksum('HR,72'), '33') // 48^52^2C^37^32
  t.equal(checksum('HR,0'), '06')
  t.equal(checksum('HR,72,833,812'), '30')
  t.equal(checksum('ID,hr-01,1.2.0'), '08')
})

t.test('framed encoders give the README lines', async (t) => {
  t.equal(encodeFramedReading(0), '$HR,0*06')
  t.equal(encodeFramedReading(60), '$HR,60*30')
  t.equal(encodeFramedReading(72), '$HR,72*33')
  t.equal(encodeFramedReading(72, [833]), '$HR,72,833*27')
  t.equal(encodeFramedReading(72, [833, 812]), '$HR,72,833,812*30')
  t.equal(encodeFramedReading(128, [469, 468, 470]), '$HR,128,469,468,470*13')
  t.equal(encodeFramedReading(300), '$HR,300*05')
  t.equal(encodeIdentity('hr-01', '1.2.0'), '$ID,hr-01,1.2.0*08')
  t.equal(encodeIdentity('esp32-c8f09e1a2b3c', '0.4.1'), '$ID,esp32-c8f09e1a2b3c,0.4.1*73')
  t.equal(code(() => encodeFramedReading(301)), 'out_of_range')
  t.equal(code(() => encodeFramedReading(-1)), 'out_of_range')
  t.equal(code(() => encodeFramedReading(72.5)), 'out_of_range')
  t.equal(code(() => encodeFramedReading(72, [0])), 'out_of_range')
  t.equal(code(() => encodeFramedReading(72, new Array(60).fill(1000))), 'too_long')
  t.equal(code(() => encodeIdentity('bad/id', '1.0')), 'bad_topic')
  t.equal(code(() => encodeIdentity('hr-01', 'v 1')), 'bad_topic')
})

t.test('framed: readings, identity, line endings and case', async (t) => {
  t.same(parseLine('framed', '$HR,72*33'), { kind: 'reading', heart_rate: 72 })
  t.same(parseLine('framed', '$HR,72*33\r'), { kind: 'reading', heart_rate: 72 })
  t.same(parseLine('framed', '$HR,72,833,812*30\r\n'), { kind: 'reading', heart_rate: 72, rr_intervals_ms: [833, 812] })
  t.same(parseLine('framed', '$HR,128,469,468,470*13'), { kind: 'reading', heart_rate: 128, rr_intervals_ms: [469, 468, 470] })
  t.same(parseLine('framed', '$HR,0*06'), { kind: 'reading', heart_rate: 0 })
  t.same(parseLine('framed', '$HR,300*05'), { kind: 'reading', heart_rate: 300 })
  t.same(parseLine('framed', '$ID,esp32-c8f09e1a2b3c,0.4.1*73'), { kind: 'identity', device_id: 'esp32-c8f09e1a2b3c', firmware_version: '0.4.1' })
  // lower-case hex digits are accepted
  const lower = `$ID,X,1*${checksum('ID,X,1').toLowerCase()}`
  t.match(lower, /\*[0-9a-f]{2}$/)
  t.same(parseLine('framed', lower), { kind: 'identity', device_id: 'X', firmware_version: '1' })
  t.same(parseLine('framed', ''), { kind: 'ignored' })
  t.same(parseLine('framed', '\r'), { kind: 'ignored' })
  // unknown sentence type with a valid checksum: forward compatible, ignored
  t.same(parseLine('framed', `$BAT,87*${checksum('BAT,87')}`), { kind: 'ignored' })
})

t.test('framed: errors', async (t) => {
  t.same(parseLine('framed', '$HR,72*34'), { kind: 'error', reason: 'bad_checksum' })
  t.same(parseLine('framed', '$HR,73*33'), { kind: 'error', reason: 'bad_checksum' })
  t.same(parseLine('framed', '$HR,72'), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', 'HR,72*33'), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', '$HR,72*3'), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', '$HR,72*3G'), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', '$HR,72*33 trailing'), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', `$HR,abc*${checksum('HR,abc')}`), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', `$HR*${checksum('HR')}`), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', `$HR,301*${checksum('HR,301')}`), { kind: 'error', reason: 'out_of_range' })
  t.same(parseLine('framed', `$HR,-1*${checksum('HR,-1')}`), { kind: 'error', reason: 'out_of_range' })
  t.same(parseLine('framed', `$HR,72.5*${checksum('HR,72.5')}`), { kind: 'error', reason: 'out_of_range' })
  t.same(parseLine('framed', `$HR,72,0*${checksum('HR,72,0')}`), { kind: 'error', reason: 'out_of_range' })
  t.same(parseLine('framed', `$HR,72,x*${checksum('HR,72,x')}`), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', `$ID,bad/id,1.0*${checksum('ID,bad/id,1.0')}`), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', `$ID,a*${checksum('ID,a')}`), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', `$HR,7\u00e92*${checksum('HR,7\u00e92')}`), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', `$${'HR,72,'.padEnd(MAX_LINE_LENGTH, '1')}*00`), { kind: 'error', reason: 'too_long' })
})

t.test('text format', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['72', { kind: 'reading', heart_rate: 72 }],
    ['72\r', { kind: 'reading', heart_rate: 72 }],
    ['  72  ', { kind: 'reading', heart_rate: 72 }],
    ['0', { kind: 'reading', heart_rate: 0 }],
    ['BPM: 72', { kind: 'reading', heart_rate: 72 }],
    ['bpm:72', { kind: 'reading', heart_rate: 72 }],
    ['BPM=72', { kind: 'reading', heart_rate: 72 }],
    ['BPM = 72', { kind: 'reading', heart_rate: 72 }],
    ['HR=72', { kind: 'reading', heart_rate: 72 }],
    ['hr: 180', { kind: 'reading', heart_rate: 180 }],
    ['B72', { kind: 'reading', heart_rate: 72 }],
    ['S512', { kind: 'ignored' }],
    ['S-12', { kind: 'ignored' }],
    ['Q833', { kind: 'ignored' }],
    ['72,98,36.5', { kind: 'reading', heart_rate: 72 }],
    ['72, 833', { kind: 'reading', heart_rate: 72 }],
    ['-999', { kind: 'no_value' }],
    ['BPM: -999', { kind: 'no_value' }],
    ['Getting reading...', { kind: 'no_value' }],
    ['getting reading...\r', { kind: 'no_value' }],
    ['', { kind: 'ignored' }],
    ['   ', { kind: 'ignored' }],
    ['301', { kind: 'error', reason: 'out_of_range' }],
    ['-5', { kind: 'error', reason: 'out_of_range' }],
    ['72.5', { kind: 'error', reason: 'out_of_range' }],
    ['BPM: 1000', { kind: 'error', reason: 'out_of_range' }],
    ['hello', { kind: 'error', reason: 'garbage' }],
    ['BPM: x', { kind: 'error', reason: 'garbage' }],
    ['bpm,spo2', { kind: 'error', reason: 'garbage' }],
    ['B', { kind: 'error', reason: 'garbage' }],
    ['7'.repeat(MAX_LINE_LENGTH + 1), { kind: 'error', reason: 'too_long' }]
  ]
  for (const [line, expected] of cases) t.same(parseLine('text', line), expected, JSON.stringify(line))
  // The limit is exclusive of the terminator: exactly MAX_LINE_LENGTH characters is parsed.
  t.same(parseLine('text', ' '.repeat(MAX_LINE_LENGTH - 2) + '72'), { kind: 'reading', heart_rate: 72 })
})

t.test('hrmi format', async (t) => {
  t.equal(hrmiPollCommand(1), 'G1\r')
  t.equal(hrmiPollCommand(32), 'G32\r')
  t.equal(hrmiPollCommand(0), 'G0\r')
  t.equal(code(() => hrmiPollCommand(33)), 'out_of_range')
  t.equal(code(() => hrmiPollCommand(-1)), 'out_of_range')
  const cases: Array<[string, unknown]> = [
    ['0 17 72', { kind: 'reading', heart_rate: 72 }],
    ['0 17 72 71 70\r', { kind: 'reading', heart_rate: 72 }],
    ['8 255 150 149', { kind: 'reading', heart_rate: 150 }],
    ['0 3 0', { kind: 'reading', heart_rate: 0 }],
    ['0 3', { kind: 'no_value' }],
    ['', { kind: 'ignored' }],
    ['256 3 72', { kind: 'error', reason: 'out_of_range' }],
    ['0 256 72', { kind: 'error', reason: 'out_of_range' }],
    ['0 3 301', { kind: 'error', reason: 'out_of_range' }],
    ['0', { kind: 'error', reason: 'garbage' }],
    ['0 3 x', { kind: 'error', reason: 'garbage' }],
    ['0 3 -72', { kind: 'error', reason: 'garbage' }],
    ['0 3 ' + Array(33).fill('72').join(' '), { kind: 'error', reason: 'garbage' }],
    ['BPM=72', { kind: 'error', reason: 'garbage' }]
  ]
  for (const [line, expected] of cases) t.same(parseLine('hrmi', line), expected, JSON.stringify(line))
  t.same(parseLine('hrmi', '0 3 ' + Array(32).fill('72').join(' ')), { kind: 'reading', heart_rate: 72 })
})

t.test('parseLine never throws on odd inputs', async (t) => {
  t.same(parseLine('nope' as 'text', '72'), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('text', undefined as unknown as string), { kind: 'error', reason: 'garbage' })
  t.same(parseLine('framed', '\u0000\u0000'), { kind: 'error', reason: 'garbage' })
})
