// A recording SourceSink for the serial source tests, plus helpers that wire a
// pty pair, a simulated device and a SerialSource together with teardown.
import type { Test } from 'tap'
import type { DeviceSighting } from '../../../relay/sources/source.ts'
import { ConformanceSink } from '../../conformance/source.ts'
import { openPtyPair, type PtyPair } from '../../../device-sim/serial/pty.ts'
import { SerialDeviceSim, type SerialDeviceSimOptions } from '../../../device-sim/serial/device.ts'
import { SerialSource, type SerialSourceOptions } from '../../../relay/sources/serial.ts'

/** The conformance suite's recording sink, with the names the serial tests use. */
export class RecorderSink extends ConformanceSink {
  /** Every device sighting, in order. */
  get devices (): DeviceSighting[] { return this.sightings }
  states (): string[] { return this.statuses.map(s => s.state) }
}

export interface Rig {
  pair: PtyPair
  device: SerialDeviceSim
  source: SerialSource
  sink: RecorderSink
}

/** A pty pair, a device on its device end and a started source on its relay end, all torn down with t. */
export async function rig (
  t: Test,
  sourceOptions: Omit<SerialSourceOptions, 'path'>,
  deviceOptions: Omit<SerialDeviceSimOptions, 'path' | 'format'> = {}
): Promise<Rig> {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const device = new SerialDeviceSim({ path: pair.devicePath, format: sourceOptions.format, ...deviceOptions })
  await device.open()
  t.teardown(() => device.close())
  const source = new SerialSource({ path: pair.relayPath, ...sourceOptions })
  const sink = new RecorderSink()
  const ac = new AbortController()
  t.teardown(async () => { ac.abort(); await source.stop() })
  await source.start(ac.signal, sink)
  return { pair, device, source, sink }
}
