// The ANT serial message protocol and the ANT+ heart-rate pages, on byte vectors: every message framed as
// sync, length, id, data and an XOR checksum of all before it. The checksums were computed by hand (XOR of the
// bytes before them) and are written out, not computed by the code under test.
import t from 'tap'
import {
  ANT_MESSAGE, antDeviceId, parseAntDeviceId, channelsSetup, decodeAntMessage, decodeBroadcast, decodeChannelEvent, decodeHeartRatePage,
  encodeAntMessage, encodeBroadcast, encodeHeartRatePage, extendedDeviceNumber, parseNetworkKey, scanModeSetup
} from '../../firmware-protocol/ant.ts'
import { AntFrameSplitter } from '../../firmware-protocol/ant-framing.ts'
import { code, hex, toHex } from '../helpers/bytes.ts'

/** A test key: the ANT+ network key itself is the operator's (it is not shipped). */
const KEY = '0102030405060708'

t.test('the configuration messages of continuous scan mode, byte for byte', async t => {
  t.same(scanModeSetup(parseNetworkKey(KEY)).map(toHex), [
    'a4 01 4a 00 ef', // reset system
    'a4 09 46 00 01 02 03 04 05 06 07 08 e3', // network key on network 0
    'a4 03 42 00 00 00 e5', // channel 0, receive, network 0
    'a4 05 51 00 00 00 78 00 88', // channel id: any device number, type 0x78 (heart rate), any transmission type
    'a4 02 45 00 39 da', // RF frequency 57 (2457 MHz)
    'a4 02 6e 00 c0 08', // lib config: extended data with the channel id and the RSSI
    'a4 01 5b 00 fe' // open Rx scan mode
  ])
})

t.test('a stick without scan mode: one wildcard heart-rate channel per slot, with the period 8070', async t => {
  const msgs = channelsSetup(parseNetworkKey(KEY), 2).map(toHex)
  t.equal(msgs.length, 3 + 2 * 5)
  t.same(msgs.slice(3, 8), [
    'a4 03 42 00 00 00 e5',
    'a4 05 51 00 00 00 78 00 88',
    'a4 03 43 00 86 1f 7d', // channel period 8070 = 0x1f86, little-endian
    'a4 02 45 00 39 da',
    'a4 01 4b 00 ee' // open channel 0
  ])
  t.equal(msgs[8], 'a4 03 42 01 00 00 e4', 'channel 1 follows')
  t.equal(code(() => channelsSetup(parseNetworkKey(KEY), 0)), 'out_of_range')
})

t.test('network keys are exactly 16 hex digits', async t => {
  t.equal(toHex(parseNetworkKey('B9a521fbBD72c345')), 'b9 a5 21 fb bd 72 c3 45')
  for (const bad of ['', '0102', '01020304050607080', 'zz02030405060708', '01 02 03 04 05 06 07 08']) {
    t.equal(code(() => parseNetworkKey(bad)), 'out_of_range', JSON.stringify(bad))
  }
})

t.test('decode checks the sync byte, the length and the checksum', async t => {
  t.same(decodeAntMessage(hex('a4 03 40 00 46 00 a1')), { id: ANT_MESSAGE.CHANNEL_EVENT, data: hex('00 46 00') })
  t.same(decodeChannelEvent(hex('00 46 00')), { channel: 0, messageId: 0x46, code: 0 })
  t.equal(code(() => decodeAntMessage(hex('a4 03 40 00 46 00 a0'))), 'bad_checksum')
  t.equal(code(() => decodeAntMessage(hex('a5 03 40 00 46 00 a1'))), 'garbage')
  t.equal(code(() => decodeAntMessage(hex('a4 04 40 00 46 00 a1'))), 'truncated')
  t.equal(code(() => decodeAntMessage(hex('a4 01'))), 'truncated')
  t.equal(code(() => decodeAntMessage(hex('a4 20 40 00'))), 'too_long')
  t.equal(code(() => decodeChannelEvent(hex('00 46'))), 'truncated')
  t.equal(code(() => encodeAntMessage(0x4e, new Array(20).fill(0))), 'too_long')
  t.equal(code(() => encodeAntMessage(0x100, [])), 'out_of_range')
  t.equal(code(() => encodeAntMessage(0x4e, [256])), 'out_of_range')
})

t.test('an extended broadcast: the payload, the 20-bit device number and the RSSI', async t => {
  const frame = hex('a4 11 4e 00 84 ff 1a 2b 3c 4d 05 48 c0 39 30 78 21 20 c3 c4 3a')
  const m = decodeAntMessage(frame)
  t.equal(m.id, ANT_MESSAGE.BROADCAST_DATA)
  const b = decodeBroadcast(m.data)
  t.equal(b.channel, 0)
  t.equal(toHex(b.payload), '84 ff 1a 2b 3c 4d 05 48')
  // Device number 0x3039 = 12345, transmission type 0x21: upper nibble 2 extends it to 2 * 65536 + 12345.
  t.same(b.id, { deviceNumber: 143_417, deviceType: 0x78, transmissionType: 0x21 })
  t.equal(b.rssi, -61)
  t.equal(antDeviceId(b.id!.deviceNumber), 'ant:143417')
  t.equal(toHex(encodeBroadcast(0, b.payload, { deviceNumber: 143_417, deviceType: 0x78, transmissionType: 0x01 }, -61)),
    'a4 11 4e 00 84 ff 1a 2b 3c 4d 05 48 c0 39 30 78 21 20 c3 00 fe', 'the simulator encodes the same bytes, with threshold 0')
  t.equal(extendedDeviceNumber(0xffff, 0xf1), 0xfffff)
  t.equal(extendedDeviceNumber(42, 0x01), 42)
})

t.test('an ANT+ device id is ant: and the decimal device number 1..1048575, and nothing else', async t => {
  t.equal(parseAntDeviceId('ant:1'), 1)
  t.equal(parseAntDeviceId('ant:143417'), 143_417)
  t.equal(parseAntDeviceId(antDeviceId(0xfffff)), 1_048_575, 'the largest 20-bit number')
  for (const bad of ['ant:0', 'ant:1048576', 'ant:01', 'ant:', 'ant:-5', 'ant:1e3', 'ant:0x10', 'ANT:5', 'ant:5 ', 'ble:5', '5', 'ant:12345678']) {
    t.equal(parseAntDeviceId(bad), undefined, JSON.stringify(bad))
  }
})

t.test('a plain broadcast has no channel id; a truncated extension is refused', async t => {
  const b = decodeBroadcast(hex('00 07 55 00 3f 00 10 c8 8c'))
  t.same(Object.keys(b).sort(), ['channel', 'payload'])
  t.equal(code(() => decodeBroadcast(hex('00 07 55 00 3f 00 10 c8'))), 'truncated')
  t.equal(code(() => decodeBroadcast(hex('00 07 55 00 3f 00 10 c8 8c 80 39 30'))), 'truncated')
  t.equal(code(() => decodeBroadcast(hex('00 07 55 00 3f 00 10 c8 8c c0 39 30 78 01 20'))), 'truncated')
})

t.test('every heart-rate data page: the common bytes and each page\'s own', async t => {
  // Bytes 4-5 event time 0x4d3c, byte 6 count 5, byte 7 72 bpm on every page.
  const tail = '3c 4d 05 48'
  const common = { eventTime: 0x4d3c, beatCount: 5, heartRate: 72 }
  t.same(decodeHeartRatePage(hex(`00 ff ff ff ${tail}`)), { page: 0, toggle: false, ...common })
  t.same(decodeHeartRatePage(hex(`81 10 27 00 ${tail}`)), { page: 1, toggle: true, ...common, operatingTimeS: 0x2710 * 2 })
  t.same(decodeHeartRatePage(hex(`02 01 34 12 ${tail}`)), { page: 2, toggle: false, ...common, manufacturerId: 1, serialNumberHigh: 0x1234 })
  t.same(decodeHeartRatePage(hex(`83 05 0a 2c ${tail}`)), { page: 3, toggle: true, ...common, hardwareVersion: 5, softwareVersion: 10, modelNumber: 44 })
  t.same(decodeHeartRatePage(hex(`84 ff 1a 2b ${tail}`)), { page: 4, toggle: true, ...common, previousEventTime: 0x2b1a })
  t.same(decodeHeartRatePage(hex(`05 ff ff ff ${tail}`)), { page: 5, toggle: false, ...common })
  t.same(decodeHeartRatePage(hex(`06 ff ff ff ${tail}`)), { page: 6, toggle: false, ...common })
  // Page 7: 85 %, 0x80 / 256 V + 3 V coarse = 3.5 V, status 2 (good).
  t.same(decodeHeartRatePage(hex(`87 55 80 23 ${tail}`)), { page: 7, toggle: true, ...common, batteryPercent: 85, batteryVolts: 3.5, batteryStatus: 2 })
  t.same(decodeHeartRatePage(hex(`07 ff 00 7f ${tail}`)), { page: 7, toggle: false, ...common, batteryStatus: 7 }, '0xff level and 0x0f voltage: not sent')
  t.equal(code(() => decodeHeartRatePage(hex('00 ff ff ff 3c 4d 05'))), 'truncated')
})

t.test('encoded pages decode to what was encoded', async t => {
  t.equal(toHex(encodeHeartRatePage({ page: 4, toggle: true, eventTime: 0x4d3c, beatCount: 5, heartRate: 72, previousEventTime: 0x2b1a })), '84 ff 1a 2b 3c 4d 05 48')
  t.equal(toHex(encodeHeartRatePage({ page: 7, eventTime: 1, beatCount: 2, heartRate: 3, batteryPercent: 85, batteryStatus: 2 })), '07 55 00 2f 01 00 02 03')
  t.equal(toHex(encodeHeartRatePage({ page: 0, eventTime: 0x10000 + 5, beatCount: 257, heartRate: 60 })), '00 ff ff ff 05 00 01 3c', 'wraps at 16 and 8 bits')
})

t.test('the frame splitter: split chunks, noise, a bad checksum and a sync byte inside data', async t => {
  const s = new AntFrameSplitter()
  const got: string[] = []
  const stretches: number[] = []
  s.on('data', (f: Uint8Array) => got.push(toHex(f)))
  s.on('garbage', (n: number) => { stretches.push(n) })
  const good = 'a4 03 40 00 46 00 a1'
  s.write(Buffer.from(hex('00 ff a4 03 40')))
  t.equal(s.pendingLength, 3, 'holds the start of a message')
  s.write(Buffer.from(hex('00 46 00 a1 a4 01 4a 00 00')))
  // A broken frame whose data holds a sync byte: the real message after it is found.
  s.write(Buffer.from(hex('a4 02 45 a4 01 4a 00 ef')))
  s.write(Buffer.from(hex('a4 ff')))
  s.end()
  await new Promise(resolve => s.on('finish', resolve))
  t.same(got, [good, 'a4 01 4a 00 ef'])
  t.same(stretches, [2, 5 + 3, 2], 'the noise; a reset with a bad checksum and the broken frame up to the sync in its data (one stretch across two chunks); a sync with an impossible length, ended by the end of the stream')
})

t.test('the splitter never holds more than one message', async t => {
  const s = new AntFrameSplitter()
  s.resume()
  s.write(Buffer.alloc(10_000, 0xa4))
  t.ok(s.pendingLength <= 23, `held ${s.pendingLength} bytes`)
})
