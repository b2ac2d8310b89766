// The one place that reaches into node-ble internals, to undo what it leaves
// behind. node-ble 1.13 registers PropertiesChanged listeners on its
// BusHelper proxies (Device.connect adds one per call, every
// GattCharacteristic subscribes as soon as its UUID is read,
// startNotifications adds another) and removes them only when a Disconnect or
// StopNotify call succeeds, which never happens after a link drop. Each one
// holds a dbus-next signal listener, so without this a relay that reconnects
// for days grows without bound.
import type NodeBle from 'node-ble'
import type * as dbus from 'dbus-next'

interface HelperHolder { helper?: { removeListeners?: () => void } }

function releaseHelper (holder: unknown): void {
  const helper = (holder as HelperHolder | null)?.helper
  if (typeof helper?.removeListeners === 'function') helper.removeListeners()
}

/** Drops the PropertiesChanged listeners node-ble's Device keeps on its proxy. */
export function releaseDevice (device: NodeBle.Device): void {
  releaseHelper(device)
}

/** Drops the listeners of every service and characteristic a gatt() call created. */
export async function releaseGatt (gatt: NodeBle.GattServer): Promise<void> {
  releaseHelper(gatt)
  for (const serviceUuid of await gatt.services()) {
    const service = await gatt.getPrimaryService(serviceUuid)
    releaseHelper(service)
    for (const charUuid of await service.characteristics()) {
      releaseHelper(await service.getCharacteristic(charUuid))
    }
  }
}

/** Signal listeners dbus-next holds on this connection (for leak checks and diagnostics). */
export function signalListenerCount (bus: dbus.MessageBus): number {
  const signals = (bus as unknown as { _signals?: { eventNames: () => Array<string | symbol>, listenerCount: (e: string | symbol) => number } })._signals
  if (signals === undefined) return 0
  return signals.eventNames().reduce((sum, name) => sum + signals.listenerCount(name), 0)
}
