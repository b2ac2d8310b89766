// Worker: the BLE reference. A bare node-ble client that connects to each
// strap, subscribes to Heart Rate Measurement and records (strap, bpm,
// receipt time): the D-Bus and node-ble cost without hr-relay. Run with
// DBUS_SYSTEM_BUS_ADDRESS set to the emulator's bus.
import NodeBle from 'node-ble'
import { decodeHeartRateMeasurement, HEART_RATE_MEASUREMENT_UUID, HEART_RATE_SERVICE_UUID } from '../../firmware-protocol/ble.ts'
import { now, serve } from '../lib/proc.ts'
import type { Receipts } from './ws-viewers.ts'

let destroy: (() => void) | undefined
let labels: number[] = []; let rates: number[] = []; let times: number[] = []
let recording = false

async function open (addresses: string[]): Promise<number> {
  const ble = NodeBle.createBluetooth()
  destroy = ble.destroy
  const adapter = await ble.bluetooth.defaultAdapter()
  if (!await adapter.isDiscovering()) await adapter.startDiscovery()
  let subscribed = 0
  for (const [i, address] of addresses.entries()) {
    const device = await adapter.waitDevice(address, 30_000)
    await device.connect()
    const gatt = await device.gatt()
    const service = await gatt.getPrimaryService(HEART_RATE_SERVICE_UUID)
    const c = await service.getCharacteristic(HEART_RATE_MEASUREMENT_UUID)
    c.on('valuechanged', (buf: Buffer) => {
      const t = now()
      if (!recording) return
      try {
        const m = decodeHeartRateMeasurement(buf)
        labels.push(i); rates.push(m.heart_rate); times.push(t)
      } catch { /* counted as lost by the join */ }
    })
    await c.startNotifications()
    subscribed++
  }
  return subscribed
}

function start (): void { labels = []; rates = []; times = []; recording = true }

/** Receipts recorded so far (recording goes on). */
function peek (): Receipts {
  return { labels: Int32Array.from(labels), measuredAt: new Float64Array(labels.length), heartRates: Float64Array.from(rates), times: Float64Array.from(times), closed: 0, garbage: 0 }
}

function collect (): Receipts {
  recording = false
  return peek()
}

function count (): number { return times.length }

function close (): void { destroy?.(); destroy = undefined }

serve({ open, start, count, peek, collect, close })
