// The demo's simulated hardware, set up before the relay builds its sources,
// so the demo's straps and sensors reach the relay through the very paths
// real ones do: BLE straps on the BlueZ emulator read by the relay's BLE
// source (node-ble over D-Bus), serial sensors on pty pairs read by its
// serial sources. Members without such hardware use MQTT (demo.ts).
//
// prepareDemo(config, log) runs before the relay builds its sources, only when
// config.demo is true (demo-hooks.ts, wired into `hr-relay start` by bin/).
// It knows the relay's configuration only by the documented keys it reads
// and sets (DemoConfig: the file format, docs/operator.md "Configuration"). Each part that cannot start is
// skipped with one info line saying why, never an error:
//   BLE     a private dbus-daemon (never the machine's system bus) with the
//           BlueZ emulator on it; DBUS_SYSTEM_BUS_ADDRESS is set to it for
//           this process only, so the relay's BLE source (node-ble reads the
//           variable when it opens its bus) talks to the emulator.
//           Skipped, so that the relay keeps reading what it would read
//           anyway, when the user set DBUS_SYSTEM_BUS_ADDRESS, or when the
//           machine's system bus socket exists and BlueZ is on it (owned or
//           activatable: a Pi with real straps), or when that bus cannot be
//           asked. The demo never connects to anything but that one
//           NameHasOwner/ListActivatableNames question on the system bus.
//   serial  pty pairs through socat (one framed sensor that sends `$ID`
//           first, one plain-text sensor with its id in the configuration),
//           added to config.serial.
//   ANT     one simulated ANT USB stick on a socat pty pair, added to
//           config.ant with a placeholder network key: the simulated stick
//           hears its straps on any key, and the real ANT+ key is the
//           operator's own (docs/operator.md "ANT+ sticks").
// Strap addresses and serial ids are derived from the demo seed, so a restart
// on the same data directory finds its pairings again. dbus-daemon and socat
// run in their own process groups: a Ctrl-C reaches only hr-relay, which
// stops its sources first and then them, so nothing logs a lost port.
import { access, stat } from 'node:fs/promises'
import { constants as fsConstants } from 'node:fs'
import { delimiter, join } from 'node:path'
import * as dbus from 'dbus-next'
import type { Logger } from 'pino'
import { BluezEmulator } from './ble/bluez-emulator.ts'
import { startPrivateBus, type PrivateBus } from './ble/private-bus.ts'
import { openPtyPair, type PtyPair } from './serial/pty.ts'
import { simAntDeviceNumber } from './transports/ant.ts'
import { strapAddress } from './transports/ble.ts'
import { antDeviceId } from '../firmware-protocol/ant.ts'

/** The seed every demo identity (strap address, serial id, physiology) derives from. */
export const DEMO_SEED = 2024

/** A serial port of the relay's configuration (`serial[]`). */
export interface DemoSerialPortConfig { path: string, baud_rate: number, format: 'framed' | 'text' | 'hrmi', device_id?: string, poll_interval_ms: number }

/** An ANT stick of the relay's configuration (`ant[]`). */
export interface DemoAntStickConfig { path: string, baud_rate: number, network_key?: string }

/** The keys of the relay's configuration that the demo reads and sets. */
export interface DemoConfig {
  ble: { enabled: boolean, adapter?: string, adapters?: Array<{ name: string }>, allow: string[], backoff_initial_ms: number, rescan_interval_ms: number }
  serial: DemoSerialPortConfig[]
  ant: DemoAntStickConfig[]
}

/** Members 0..3 wear BLE straps, 4 and 5 serial sensors, 8..10 ANT+ straps (below); the rest are MQTT devices. */
export const DEMO_BLE_STRAPS = 4
export const DEMO_SERIAL_FORMATS = ['framed', 'text'] as const
export const SYSTEM_BUS_SOCKET = '/var/run/dbus/system_bus_socket'
/** Members 8..10 wear ANT+ straps, heard by one simulated ANT stick. */
export const DEMO_ANT_FIRST_MEMBER = 8
export const DEMO_ANT_STRAPS = 3
/** A placeholder, not any real network's key: the demo's stick is simulated and hears its straps on any key. */
export const DEMO_ANT_NETWORK_KEY = '0000000000000000'

export interface DemoAnt {
  pair: PtyPair
  /** Member index → strap device id (`ant:<device number>`). */
  straps: Array<{ member: number, device_id: string }>
}

export interface DemoBle {
  bluez: BluezEmulator
  busAddress: string
  /** Member index → strap address. */
  straps: Array<{ member: number, address: string }>
}

export interface DemoSerialPort {
  member: number
  device_id: string
  format: 'framed' | 'text'
  pair: PtyPair
}

export interface DemoHardware<C extends DemoConfig = DemoConfig> {
  /** The configuration to build the service from: BLE on the emulator, the ptys in `serial`. */
  config: C
  ble: DemoBle | null
  serial: DemoSerialPort[]
  ant: DemoAnt | null
  /** Stops the emulator, the private bus and socat; restores DBUS_SYSTEM_BUS_ADDRESS. Idempotent. */
  stop (): Promise<void>
}

export interface PrepareOptions {
  /** The system bus socket asked about BlueZ. Default /var/run/dbus/system_bus_socket. */
  systemBusSocket?: string
}

/** The strap address of demo member `i` (a random static address from the demo seed). */
export function demoStrapAddress (i: number): string { return strapAddress(DEMO_SEED, i) }

/** The id the serial sensor of demo member `i` reports (`$ID`) or is configured with. */
export function demoSerialId (i: number): string { return `demo-${DEMO_SEED}-serial-${i + 1}` }

/** The device id of demo member `i`'s ANT+ strap (its device number from the demo seed). */
export function demoAntId (i: number): string { return antDeviceId(simAntDeviceNumber(DEMO_SEED, i - DEMO_ANT_FIRST_MEMBER)) }

async function onPath (command: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue
    try { await access(join(dir, command), fsConstants.X_OK); return true } catch { /* next */ }
  }
  return false
}

/** Whether `org.bluez` is owned or activatable on the bus at `socket`; throws when the bus cannot be asked. */
async function bluezOnBus (socket: string): Promise<boolean> {
  const bus = dbus.sessionBus({ busAddress: `unix:path=${socket}` })
  const failed = new Promise<never>((_resolve, reject) => {
    bus.on('error', (err: unknown) => { reject(err instanceof Error ? err : new Error(String(err))) })
    setTimeout(() => { reject(new Error('no answer in 3 s')) }, 3000).unref()
  })
  failed.catch(() => {})
  const ask = async (member: string, signature?: string, body: unknown[] = []): Promise<unknown> => {
    const reply = await Promise.race([bus.call(new dbus.Message({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member,
      ...(signature === undefined ? {} : { signature }),
      body
    })), failed])
    return reply?.body[0]
  }
  try {
    if (await ask('NameHasOwner', 's', ['org.bluez']) === true) return true
    const activatable = await ask('ListActivatableNames')
    return Array.isArray(activatable) && activatable.includes('org.bluez')
  } finally {
    bus.disconnect()
  }
}

/** Why the BLE part must not run here, or null when it may. */
async function bleBlocker (socket: string): Promise<string | null> {
  const set = process.env.DBUS_SYSTEM_BUS_ADDRESS
  if (set !== undefined && set !== '') return `DBUS_SYSTEM_BUS_ADDRESS is set (${set}); the relay reads that bus and the demo adds no straps to it`
  const exists = await stat(socket).then(() => true, () => false)
  if (exists) {
    try {
      if (await bluezOnBus(socket)) return `BlueZ runs on this machine's system bus (${socket}); the relay reads real straps there`
    } catch (err) {
      return `cannot ask the system bus (${socket}) whether BlueZ runs: ${(err as Error).message}`
    }
  }
  if (!await onPath('dbus-daemon')) return 'dbus-daemon is not installed'
  return null
}

async function startBle (config: DemoConfig, socket: string, log: Logger): Promise<{ ble: DemoBle, bus: PrivateBus } | null> {
  const blocker = await bleBlocker(socket)
  if (blocker !== null) { log.info(`demo: no BLE straps, their members use MQTT: ${blocker}`); return null }
  let bus: PrivateBus
  try {
    bus = await startPrivateBus(undefined, { detached: true })
  } catch (err) {
    log.info(`demo: no BLE straps, their members use MQTT: cannot start dbus-daemon: ${(err as Error).message}`)
    return null
  }
  try {
    const bluez = await BluezEmulator.start({ busAddress: bus.address, adapterNames: config.ble.adapters?.map(a => a.name) ?? [config.ble.adapter ?? 'hci0'] })
    const straps = Array.from({ length: DEMO_BLE_STRAPS }, (_v, member) => ({ member, address: demoStrapAddress(member) }))
    return { ble: { bluez, busAddress: bus.address, straps }, bus }
  } catch (err) {
    await bus.stop().catch(() => {})
    log.info(`demo: no BLE straps, their members use MQTT: the BlueZ emulator did not start: ${(err as Error).message}`)
    return null
  }
}

async function startSerial (log: Logger): Promise<DemoSerialPort[]> {
  if (!await onPath('socat')) { log.info('demo: no serial sensors, their members use MQTT: socat is not installed'); return [] }
  const ports: DemoSerialPort[] = []
  try {
    for (const [k, format] of DEMO_SERIAL_FORMATS.entries()) {
      const member = DEMO_BLE_STRAPS + k
      ports.push({ member, device_id: demoSerialId(member), format, pair: await openPtyPair({ detached: true }) })
    }
    return ports
  } catch (err) {
    for (const p of ports) await p.pair.close().catch(() => {})
    log.info(`demo: no serial sensors, their members use MQTT: cannot open a pty pair: ${(err as Error).message}`)
    return []
  }
}

async function startAnt (log: Logger): Promise<DemoAnt | null> {
  if (!await onPath('socat')) { log.info('demo: no ANT+ straps, their members use MQTT: socat is not installed'); return null }
  try {
    const pair = await openPtyPair({ detached: true })
    const straps = Array.from({ length: DEMO_ANT_STRAPS }, (_v, k) => ({ member: DEMO_ANT_FIRST_MEMBER + k, device_id: demoAntId(DEMO_ANT_FIRST_MEMBER + k) }))
    return { pair, straps }
  } catch (err) {
    log.info(`demo: no ANT+ straps, their members use MQTT: cannot open a pty pair: ${(err as Error).message}`)
    return null
  }
}

export async function prepareDemo<C extends DemoConfig> (config: C, log: Logger, options: PrepareOptions = {}): Promise<DemoHardware<C>> {
  const dlog = log.child({ component: 'demo' })
  const next = structuredClone(config)
  const started = await startBle(config, options.systemBusSocket ?? SYSTEM_BUS_SOCKET, dlog)
  const serial = await startSerial(dlog)
  const ant = await startAnt(dlog)

  let envSet: string | undefined
  if (started !== null) {
    envSet = started.ble.busAddress
    process.env.DBUS_SYSTEM_BUS_ADDRESS = envSet
    const addresses = started.ble.straps.map(s => s.address)
    next.ble = {
      ...next.ble,
      enabled: true,
      // Paired straps are connected on the next scan; a short interval connects them within a second.
      rescan_interval_ms: Math.min(next.ble.rescan_interval_ms, 1000),
      backoff_initial_ms: Math.min(next.ble.backoff_initial_ms, 500),
      allow: next.ble.allow.length === 0 ? [] : [...next.ble.allow, ...addresses]
    }
    dlog.info({ bus: envSet, straps: addresses.length }, 'demo: BLE straps on the BlueZ emulator (private D-Bus)')
  }
  for (const p of serial) {
    const port: DemoSerialPortConfig = { path: p.pair.relayPath, baud_rate: 115200, format: p.format, poll_interval_ms: 1000 }
    // A framed sensor says who it is ($ID); a plain-text one cannot, so its id is configured.
    if (p.format === 'text') port.device_id = p.device_id
    next.serial.push(port)
  }
  if (serial.length > 0) dlog.info({ ports: serial.map(p => p.pair.relayPath) }, 'demo: serial sensors on pty pairs')
  if (ant !== null) {
    next.ant.push({ path: ant.pair.relayPath, baud_rate: 115200, network_key: DEMO_ANT_NETWORK_KEY })
    dlog.info({ port: ant.pair.relayPath, straps: ant.straps.length }, 'demo: ANT+ straps on a simulated ANT stick (pty pair)')
  }

  let stopping: Promise<void> | undefined
  return {
    config: next,
    ble: started?.ble ?? null,
    serial,
    ant,
    stop () {
      stopping ??= (async () => {
        if (started !== null) {
          await started.ble.bluez.stop().catch(() => {})
          await started.bus.stop().catch(() => {})
        }
        if (envSet !== undefined && process.env.DBUS_SYSTEM_BUS_ADDRESS === envSet) delete process.env.DBUS_SYSTEM_BUS_ADDRESS
        for (const p of serial) await p.pair.close().catch(() => {})
        await ant?.pair.close().catch(() => {})
      })()
      return stopping
    }
  }
}
