import t from 'tap'
import { lstat, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { SerialPort } from 'serialport'
import { openPtyPair } from '../../../device-sim/serial/pty.ts'

function openPort (path: string): Promise<SerialPort> {
  const port = new SerialPort({ path, baudRate: 115200, autoOpen: false })
  return new Promise((resolve, reject) => port.open(err => err ? reject(err) : resolve(port)))
}

function closePort (port: SerialPort): Promise<void> {
  return new Promise(resolve => port.isOpen ? port.close(() => resolve()) : resolve())
}

function readBytes (port: SerialPort, count: number): Promise<Buffer> {
  return new Promise(resolve => {
    let got = Buffer.alloc(0)
    const onData = (chunk: Buffer): void => {
      got = Buffer.concat([got, chunk])
      if (got.length >= count) { port.off('data', onData); resolve(got) }
    }
    port.on('data', onData)
  })
}

t.test('bytes written at one end are read at the other, both ways', async t => {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  t.equal(pair.plugged, true)
  const dev = await openPort(pair.devicePath)
  const relay = await openPort(pair.relayPath)
  t.teardown(async () => { await closePort(dev); await closePort(relay) })

  const toRelay = readBytes(relay, 5)
  dev.write(Buffer.from([0x24, 0x00, 0xff, 0x0d, 0x0a]))
  t.same([...await toRelay], [0x24, 0x00, 0xff, 0x0d, 0x0a], 'raw bytes pass unchanged (raw, no echo)')

  const toDev = readBytes(dev, 3)
  relay.write('G1\r')
  t.equal((await toDev).toString('latin1'), 'G1\r', 'no CR/LF translation')
})

t.test('unplug closes the relay end as a disconnect and removes the links; plug restores the same path', async t => {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const relay = await openPort(pair.relayPath)
  const dev = await openPort(pair.devicePath)
  const closed = new Promise<Error | null>(resolve => relay.once('close', resolve))
  // Exchange a byte first so the relay's read is parked in poll() when the
  // hangup comes (a read that starts after it spins on 0-byte reads:
  // serialport/bindings-cpp issue 162; the serial source has a watchdog for that).
  const first = readBytes(relay, 1)
  dev.write('x')
  t.equal((await first).toString(), 'x')

  await pair.unplug()
  const err = await closed
  t.equal((err as { disconnected?: boolean } | null)?.disconnected, true, 'serialport reports a disconnect')
  t.equal(pair.plugged, false)
  await closePort(dev)
  await t.rejects(lstat(pair.relayPath), { code: 'ENOENT' }, 'relay link removed')
  await t.rejects(lstat(pair.devicePath), { code: 'ENOENT' }, 'device link removed')

  await pair.plug()
  t.equal(pair.plugged, true)
  const relay2 = await openPort(pair.relayPath)
  const dev2 = await openPort(pair.devicePath)
  t.teardown(async () => { await closePort(dev2); await closePort(relay2) })
  const got = readBytes(relay2, 6)
  dev2.write('again\n')
  t.equal((await got).toString('utf8'), 'again\n', 'the same relay path works after plugging back')
})

t.test('close removes the temporary directory and is idempotent', async t => {
  const pair = await openPtyPair()
  const dir = dirname(pair.relayPath)
  t.ok((await stat(dir)).isDirectory())
  await pair.close()
  await pair.close()
  await t.rejects(stat(dir), { code: 'ENOENT' })
  await t.rejects(pair.plug(), /closed/)
})
