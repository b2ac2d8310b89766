import t from 'tap'
import fc from 'fast-check'
import { fromBuffer, toBuffer, type OscArgInput } from 'osc-min'
import { encodeOscMessage, decodeOscMessage, oscBool, type OscArg } from '../../firmware-protocol/osc.ts'
import { hex, toHex, code } from '../helpers/bytes.ts'
import { ProtocolError } from '../../firmware-protocol/errors.ts'

t.test('OSC 1.0 byte vectors: address and type tags padded to 4 bytes, big-endian arguments', async t => {
  // "/a" + 2 nulls; ",i" + 2 nulls; int32 72.
  t.equal(toHex(encodeOscMessage({ address: '/a', args: [{ type: 'i', value: 72 }] })), '2f 61 00 00 2c 69 00 00 00 00 00 48')
  // A 4-character address still needs its null terminator: 4 more bytes of padding.
  t.equal(toHex(encodeOscMessage({ address: '/abc', args: [{ type: 'i', value: -1 }] })), '2f 61 62 63 00 00 00 00 2c 69 00 00 ff ff ff ff')
  t.equal(toHex(encodeOscMessage({ address: '/a', args: [{ type: 'f', value: 0.5 }] })), '2f 61 00 00 2c 66 00 00 3f 00 00 00')
  t.equal(toHex(encodeOscMessage({ address: '/a', args: [{ type: 'f', value: -1 }] })), '2f 61 00 00 2c 66 00 00 bf 80 00 00')
  // T and F carry no argument bytes.
  t.equal(toHex(encodeOscMessage({ address: '/a', args: [oscBool(true)] })), '2f 61 00 00 2c 54 00 00')
  t.equal(toHex(encodeOscMessage({ address: '/a', args: [oscBool(false)] })), '2f 61 00 00 2c 46 00 00')
  // ",iT" is 3 characters + null = 4 bytes exactly.
  t.equal(toHex(encodeOscMessage({ address: '/a', args: [{ type: 'i', value: 256 }, { type: 'T' }] })), '2f 61 00 00 2c 69 54 00 00 00 01 00')
  t.equal(toHex(encodeOscMessage({ address: '/a', args: [] })), '2f 61 00 00 2c 00 00 00')
})

t.test('a VRChat parameter message matches an independent encoder (osc-min) byte for byte', async t => {
  const cases: Array<[OscArg, OscArgInput]> = [
    [{ type: 'i', value: 128 }, { type: 'integer', value: 128 }],
    [{ type: 'f', value: 0.25 }, { type: 'float', value: 0.25 }],
    [{ type: 'T' }, true],
    [{ type: 'F' }, false]
  ]
  for (const [arg, theirs] of cases) {
    const ours = encodeOscMessage({ address: '/avatar/parameters/HR', args: [arg] })
    const view = toBuffer({ address: '/avatar/parameters/HR', args: [theirs] })
    t.equal(toHex(ours), toHex(new Uint8Array(view.buffer, view.byteOffset, view.byteLength)), arg.type)
    t.match(fromBuffer(ours), { oscType: 'message', address: '/avatar/parameters/HR' })
  }
})

t.test('decode is the inverse of encode', async t => {
  const msg = { address: '/avatar/parameters/HRPercent', args: [{ type: 'f', value: 0.5 }, { type: 'i', value: -7 }, { type: 'T' }, { type: 'F' }] as OscArg[] }
  t.same(decodeOscMessage(encodeOscMessage(msg)), msg)
  t.same(decodeOscMessage(hex('2f 61 00 00 2c 69 00 00 00 00 00 48')), { address: '/a', args: [{ type: 'i', value: 72 }] })
})

t.test('encode refuses what OSC cannot carry', async t => {
  t.equal(code(() => encodeOscMessage({ address: 'a', args: [] })), 'bad_topic', 'no leading slash')
  t.equal(code(() => encodeOscMessage({ address: '/a b', args: [] })), 'bad_topic', 'space')
  t.equal(code(() => encodeOscMessage({ address: '/a#', args: [] })), 'bad_topic', '#')
  t.equal(code(() => encodeOscMessage({ address: '/é', args: [] })), 'bad_topic', 'not ASCII')
  t.equal(code(() => encodeOscMessage({ address: '/a', args: [{ type: 'i', value: 1.5 }] })), 'out_of_range')
  t.equal(code(() => encodeOscMessage({ address: '/a', args: [{ type: 'i', value: 2 ** 31 }] })), 'out_of_range')
  t.equal(code(() => encodeOscMessage({ address: '/a', args: [{ type: 'f', value: Number.NaN }] })), 'out_of_range')
  t.equal(code(() => encodeOscMessage({ address: '/a', args: [{ type: 's' } as unknown as OscArg] })), 'garbage')
})

t.test('decode refuses malformed packets with a typed error', async t => {
  t.equal(code(() => decodeOscMessage(hex('2f 61 00'))), 'truncated', 'not a multiple of 4')
  t.equal(code(() => decodeOscMessage(hex('2f 61 62 63'))), 'truncated', 'no terminator')
  t.equal(code(() => decodeOscMessage(hex('2f 61 00 00 2c 69 00 00'))), 'truncated', 'int argument missing')
  t.equal(code(() => decodeOscMessage(hex('2f 61 00 00 69 00 00 00'))), 'garbage', 'type tags without comma')
  t.equal(code(() => decodeOscMessage(hex('2f 61 00 00 2c 73 00 00'))), 'garbage', 'string type tag not supported')
  t.equal(code(() => decodeOscMessage(hex('2f 61 00 01 2c 00 00 00'))), 'garbage', 'padding not null')
  t.equal(code(() => decodeOscMessage(hex('2f 61 00 00 2c 00 00 00 00 00 00 00'))), 'too_long', 'trailing bytes')
  t.equal(code(() => decodeOscMessage(hex('61 00 00 00 2c 00 00 00'))), 'bad_topic', 'address without slash')
})

t.test('property: decode throws only ProtocolError on any bytes; encode then decode returns the message', async t => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), bytes => {
    try { decodeOscMessage(bytes) } catch (err) { if (!(err instanceof ProtocolError)) throw err }
  }), { numRuns: 2000 })
  const arg = fc.oneof(
    fc.integer({ min: -0x80000000, max: 0x7fffffff }).map((value): OscArg => ({ type: 'i', value })),
    fc.float({ noNaN: true, noDefaultInfinity: true }).map((value): OscArg => ({ type: 'f', value: Object.is(value, -0) ? 0 : value })),
    fc.boolean().map(oscBool)
  )
  const address = fc.stringMatching(/^\/[A-Za-z0-9_/]{0,30}$/)
  fc.assert(fc.property(address, fc.array(arg, { maxLength: 6 }), (addr, args) => {
    t.same(decodeOscMessage(encodeOscMessage({ address: addr, args })), { address: addr, args })
  }), { numRuns: 300 })
})
