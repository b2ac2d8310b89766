// The one small interface every input implements (BLE, serial, MQTT, HTTP
// write, simulator). Modelled on serialport's BindingInterface: promise-based,
// lifecycle owned by start(signal)/stop(), constructors do no I/O.
//
// Who implements what:
// - Source: BLE (ble.ts), serial (serial.ts) and the MQTT device ingest
//   (../broker/mqtt-source.ts; the broker owns the sockets, the source the
//   frames). The simulator's transports are peers of these: they are devices,
//   not inputs of the relay.
// - Ingest side only: the HTTP write route (api/http/data.ts) calls
//   `Ingest.submit` and answers 200 only after it resolved. It is not a
//   Source because it would own nothing a Source owns: the HTTP listener's
//   lifecycle is the API server's (main.ts listens and closes it), there is no
//   device to reopen and no connection to report, and a bad frame is answered
//   to its sender (400 with the spec's error body) rather than counted; and
//   api/ may not import relay/ (.dependency-cruiser.cjs), where this file is.
//
// Every adapter runs the conformance suite test/conformance/source.ts
// (sourceSuite for a Source, ingestSuite for the Ingest side), one file per
// adapter under test/conformance/.
import type { DeviceSighting, Reading, IngestResult } from '../../api/pipeline/reading.ts'
import type { AdapterHealth } from '../../api/services.ts'

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
  /** A source that spreads devices over several radios (BLE adapters) lists them. */
  adapters? (): AdapterHealth[]
}
