// The one small interface every input implements (BLE, serial, MQTT, HTTP
// write, simulator). Modelled on serialport's BindingInterface: promise-based,
// lifecycle owned by start(signal)/stop(), constructors do no I/O.
import type { DeviceSighting, Reading, IngestResult } from '../../api/pipeline/reading.ts'

export type { DeviceSighting }

export type SourceState = 'starting' | 'running' | 'degraded' | 'unavailable' | 'stopped'

export interface SourceStatus {
  state: SourceState
  /** Human-readable reason for the state, e.g. "no BlueZ on the system bus". */
  detail?: string
  /** Devices currently connected through this source. */
  connected?: number
}

/** What a source reports to. The composition root wires it to the pipeline. */
export interface SourceSink {
  /** Hand one reading to the pipeline; resolves when it is stored or dropped. */
  reading (reading: Reading): Promise<IngestResult>
  status (status: SourceStatus): void
  device (sighting: DeviceSighting): void
  /** A frame, line or packet that was dropped, by reason (for /metrics). */
  dropped (reason: string): void
}

export interface Source {
  /** Stable name used in /health and /metrics, e.g. "ble", "serial:/dev/ttyUSB0". */
  readonly id: string
  start (signal: AbortSignal, sink: SourceSink): Promise<void>
  /** Stops and removes every listener the source added. Idempotent. */
  stop (): Promise<void>
  status (): SourceStatus
}
