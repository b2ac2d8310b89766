// The source conformance suite for the serial source on real pseudo-terminals
// (socat): the device end is device-sim's serial device, the relay end a
// SerialSource. A failed device is an unplugged adapter (socat ends, the pty
// vanishes); the source reopens the same path with backoff.
import t from 'tap'
import { openPtyPair } from '../../device-sim/serial/pty.ts'
import { SerialDeviceSim } from '../../device-sim/serial/device.ts'
import { SerialSource } from '../../relay/sources/serial.ts'
import { sourceSuite } from './source.ts'
import { recordingLogger } from './log-lines.ts'

const backoff = { initialMs: 40, maxMs: 320 }

sourceSuite(t, {
  name: 'serial',
  startStates: ['starting', 'running'],
  lostState: 'degraded',
  recovery: { by: 'source', backoff },
  async rig (t) {
    const pair = await openPtyPair()
    t.teardown(() => pair.close())
    let device = new SerialDeviceSim({ path: pair.devicePath, format: 'framed' })
    await device.open()
    t.teardown(() => device.close())
    const { logger, lines } = recordingLogger()
    const source = new SerialSource({ path: pair.relayPath, format: 'framed', deviceId: 'strap-serial', reopen: backoff, presenceCheckMs: 100, logger })
    t.teardown(() => source.stop())
    return {
      source,
      deviceId: 'strap-serial',
      async connect () {},
      async good (bpm) { await device.sendReading(bpm) },
      async bad () { await device.sendBadChecksum(70); return 'serial_bad_checksum' },
      async fail () {
        await pair.unplug()
        await device.close()
      },
      async restore (sink) {
        await pair.plug()
        await sink.waitFor('the port reopened', () => source.status().state === 'running')
        device = new SerialDeviceSim({ path: pair.devicePath, format: 'framed' })
        await device.open()
      },
      backoffDelays: () => lines.filter(l => l.msg === 'reopen scheduled').map(l => l.delay as number)
    }
  }
})
