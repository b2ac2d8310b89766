// A BlueZ emulator on a private dbus-daemon for tests that run the whole
// service: node-ble in this process finds it through DBUS_SYSTEM_BUS_ADDRESS,
// which stop() restores. Stop the service before calling stop().
import { startPrivateBus, type PrivateBus } from '../../device-sim/ble/private-bus.ts'
import { BluezEmulator } from '../../device-sim/ble/bluez-emulator.ts'

export interface EmulatedBluez {
  bus: PrivateBus
  emulator: BluezEmulator
  stop (): Promise<void>
}

export async function startEmulatedBluez (options: Omit<Parameters<typeof BluezEmulator.start>[0], 'busAddress'> = {}): Promise<EmulatedBluez> {
  const bus = await startPrivateBus()
  const emulator = await BluezEmulator.start({ ...options, busAddress: bus.address })
  const previous = process.env.DBUS_SYSTEM_BUS_ADDRESS
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address
  let stopping: Promise<void> | undefined
  return {
    bus,
    emulator,
    stop: () => {
      stopping ??= (async () => {
        try {
          await emulator.stop()
          await bus.stop()
        } finally {
          if (previous === undefined) delete process.env.DBUS_SYSTEM_BUS_ADDRESS
          else process.env.DBUS_SYSTEM_BUS_ADDRESS = previous
        }
      })()
      return stopping
    }
  }
}
