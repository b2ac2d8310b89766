// The source conformance suite for the BLE source through node-ble over one
// real private dbus-daemon with the BlueZ emulator (device-sim/ble), shared by
// every subtest of this file. A failed device is a dropped link whose next
// two connects are refused; the strap link reconnects with backoff.
import t from 'tap'
import { startPrivateBus } from '../../device-sim/ble/private-bus.ts'
import { BluezEmulator } from '../../device-sim/ble/bluez-emulator.ts'
import { BleSource } from '../../relay/sources/ble.ts'
import { sourceSuite } from './source.ts'
import { recordingLogger } from './log-lines.ts'

const backoff = { initialMs: 40, maxMs: 320 }
const bus = await startPrivateBus()
const emulator = await BluezEmulator.start({ busAddress: bus.address })
process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address
t.teardown(async () => {
  await emulator.stop()
  await bus.stop()
})

let next = 1

sourceSuite(t, {
  name: 'ble',
  startStates: ['starting', 'running'],
  lostState: 'running',
  recovery: { by: 'source', backoff },
  async rig (t) {
    // A strap of its own per rig, so that no rig sees another's strap.
    const address = `AA:BB:CC:00:10:${(next++).toString(16).padStart(2, '0').toUpperCase()}`
    const strap = emulator.addStrap({ address })
    const { logger, lines } = recordingLogger()
    const source = new BleSource({ allow: [address], backoff, rescanIntervalMs: 100, connectTimeoutMs: 5000, gattTimeoutMs: 5000, logger })
    t.teardown(async () => {
      await source.stop()
      emulator.removeStrap(address)
    })
    const send = async (bytes: Uint8Array): Promise<void> => {
      if (!strap.notify(bytes)) throw new Error('the strap is not notifying')
    }
    return {
      source,
      deviceId: address,
      async connect (sink) {
        await sink.waitFor('the strap connected', () => source.status().connected === 1)
        if (!strap.notifying) throw new Error('connected but not notifying')
      },
      // Flags 0x00: uint8 heart rate, nothing else (Heart Rate Measurement, GATT 0x2A37).
      async good (bpm) { await send(Uint8Array.of(0x00, bpm)) },
      // Flags claim a uint16 heart rate, one byte follows: malformed.
      async bad () { await send(Uint8Array.of(0x01, 70)); return 'ble_malformed' },
      async fail () {
        strap.faults = { refuseConnect: 'Failed', refuseCount: 2 }
        strap.dropLink()
      },
      async restore (sink) {
        // Two refused connects, then the third after the drop succeeds.
        await sink.waitFor('the strap connected again', () => source.status().connected === 1)
        if (strap.connectCalls !== 4 || !strap.notifying) throw new Error(`connect calls ${strap.connectCalls}, notifying ${String(strap.notifying)}`)
      },
      backoffDelays: () => lines.filter(l => l.msg === 'reconnecting after backoff').map(l => l.delay_ms as number)
    }
  }
})
