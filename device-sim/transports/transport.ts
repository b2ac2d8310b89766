// The one seam between the simulation loop (runner.ts) and the ways a real
// device reaches the relay: BLE through BlueZ, a serial line, MQTT over Wi-Fi,
// an ANT+ strap heard by an ANT USB stick, or an app writing over HTTP. Each
// transport implements SimTransport.
import type { InstantFaultKind, LinkFaultKind } from '../faults.ts'

export type TransportName = 'ble' | 'serial' | 'mqtt' | 'http' | 'ant'
export const TRANSPORTS: readonly TransportName[] = ['ble', 'serial', 'mqtt', 'http', 'ant']

/** One simulated device as the runner knows it. */
export interface SimDevice {
  index: number
  /** The id the relay sees: strap address, serial `$ID`, MQTT device id, `ant:<device number>`, or the HTTP writer's username. */
  device_id: string
  /** A person's name for the live view. */
  label: string
}

/** One reading as the device would send it. */
export interface SimReading {
  measured_at: number
  heart_rate: number
  rr_intervals_ms: number[]
  energy_expended_kj?: number
  battery_percent?: number
  sensor_contact: boolean
}

/** 'not_applicable': the transport cannot carry this fault (e.g. a checksum over BLE). */
export type FaultOutcome = 'injected' | 'not_applicable'

export interface SimTransport {
  /** 'mixed': devices spread over several transports (transports/mixed.ts). */
  readonly name: TransportName | 'mixed'
  /** Creates the devices (straps, ptys, connections). */
  open (devices: SimDevice[]): Promise<void>
  /** Where to point the relay: bus address, pty paths, broker, config snippets. */
  describe (): string[]
  /** Sends one reading; true when it left the device and (QoS 1, HTTP) was acknowledged. */
  send (device: number, reading: SimReading): Promise<boolean>
  /** An instantaneous fault (`reading` is what the device would have sent). */
  inject (device: number, kind: Exclude<InstantFaultKind, 'burst'>, reading: SimReading): Promise<FaultOutcome>
  /** Takes a device's link down or brings it back. */
  link (device: number, up: boolean, kind: LinkFaultKind): Promise<FaultOutcome>
  close (): Promise<void>
}

/** Errors a transport saw that were not injected (for the live view). */
export interface TransportErrors { errors: number, lastError?: string }
