// Worker: N heart-rate straps on the BlueZ emulator (device-sim/ble) on a
// private dbus-daemon, with one adapter or several (each with a connection
// limit and a count above which links stay silent, as the class scenario sets). Each strap notifies one measurement per period once a
// client subscribed; the bpm value is a per-strap sequence (40, 41, ...),
// so a receipt is matched to its notification by (strap, bpm) — BLE
// notifications carry no timestamp.
import { startPrivateBus, type PrivateBus } from '../../device-sim/ble/private-bus.ts'
import { BluezEmulator, type EmulatedStrap } from '../../device-sim/ble/bluez-emulator.ts'
import { now, serve } from '../lib/proc.ts'

let bus: PrivateBus | undefined
let emulator: BluezEmulator | undefined
let straps: EmulatedStrap[] = []
let adapterNames: string[] = ['hci0']
/** Set by stopNotifying(): the running notify() ends at its next tick. */
let stopRequested = false

export interface StrapsOptions {
  /** How many adapters (hci0, hci1, ...); default 1. */
  adapters?: number
  /** Connections each adapter accepts before refusing with BlueZ's Failed. */
  maxConnections?: number
  /** Links above this count on one adapter connect but deliver nothing. */
  silentAbove?: number
}

export function strapAddressOf (i: number): string {
  return `C0:BE:4C:00:${((i >>> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`.toUpperCase()
}

async function start (n: number, options: StrapsOptions = {}): Promise<{ busAddress: string, addresses: string[], adapterNames: string[] }> {
  bus = await startPrivateBus()
  const count = options.adapters ?? 1
  adapterNames = Array.from({ length: count }, (_, i) => `hci${i}`)
  const limits = { ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }), ...(options.silentAbove === undefined ? {} : { silentAbove: options.silentAbove }) }
  emulator = await BluezEmulator.start({ busAddress: bus.address, adapterNames, limits })
  const addresses = Array.from({ length: n }, (_, i) => strapAddressOf(i))
  // Strap i is heard best by adapter i mod count, less well by the others (as straps spread around a room).
  straps = addresses.map((address, i) => (emulator as BluezEmulator).addStrap({
    address,
    name: `Bench HRM ${i}`,
    battery: 90,
    rssi: -70,
    rssiAt: Object.fromEntries(adapterNames.map((name, a) => [name, a === i % count ? -50 : -70 - ((a + i) % 3) * 5]))
  }))
  return { busAddress: bus.address, addresses, adapterNames }
}

/** Links up through each adapter now. */
function links (): Record<string, number> {
  return Object.fromEntries(adapterNames.map(name => [name, emulator?.linksOn(name) ?? 0]))
}

function names (): string[] { return adapterNames }

function unplugAdapter (name: string): void { emulator?.unplugAdapter(name) }
function plugAdapter (name: string): void { emulator?.plugAdapter(name) }

/** Notifies at `hz` per strap until stopNotifying(). */
async function notifyUntilStopped (hz: number): Promise<number> {
  stopRequested = false
  const { sends } = await notify(hz, 3_600_000)
  return sends.size
}

function stopNotifying (): void { stopRequested = true }

/** Resolves with the count of subscribed straps once all are, or at the deadline. */
async function waitNotifying (timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline && straps.some(s => !s.notifying)) await new Promise(resolve => setTimeout(resolve, 100))
  return straps.filter(s => s.notifying).length
}

async function notify (hz: number, durationMs: number): Promise<{ sends: Map<string, number>, skipped: number }> {
  const sends = new Map<string, number>()
  const n = straps.length
  const interval = 1000 / (hz * n)
  const total = Math.floor(durationMs / interval)
  let skipped = 0
  const start = now()
  await new Promise<void>(resolve => {
    let j = 0
    const tick = (): void => {
      const due = Math.min(total, Math.floor((now() - start) / interval) + 1)
      while (j < due) {
        const i = j % n
        const bpm = 40 + Math.floor(j / n) % 200
        j++
        const t0 = now()
        if ((straps[i] as EmulatedStrap).sendHeartRate({ heart_rate: bpm, sensor_contact: 'detected' })) sends.set(`${i}:${bpm}`, t0)
        else skipped++
      }
      if (j >= total || stopRequested) { stopRequested = false; resolve(); return }
      setTimeout(tick, Math.max(1, Math.min(5, j * interval - (now() - start))))
    }
    tick()
  })
  return { sends, skipped }
}

async function stop (): Promise<void> {
  await emulator?.stop()
  await bus?.stop()
  emulator = undefined; bus = undefined; straps = []
}

serve({ start, waitNotifying, notify, notifyUntilStopped, stopNotifying, links, adapterNames: names, unplugAdapter, plugAdapter, stop })
