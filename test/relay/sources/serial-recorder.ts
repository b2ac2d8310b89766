// A recording SourceSink for the serial source tests, plus helpers that wire a
// pty pair, a simulated device and a SerialSource together with teardown.
import type { Test } from 'tap'
import type { Reading, IngestResult } from '../../../api/pipeline/reading.ts'
import type { DeviceSighting, SourceSink, SourceStatus } from '../../../relay/sources/source.ts'
import { openPtyPair, type PtyPair } from '../../../device-sim/serial/pty.ts'
import { SerialDeviceSim, type SerialDeviceSimOptions } from '../../../device-sim/serial/device.ts'
import { SerialSource, type SerialSourceOptions } from '../../../relay/sources/serial.ts'

export class RecorderSink implements SourceSink {
  readonly readings: Reading[] = []
  readonly statuses: SourceStatus[] = []
  readonly devices: DeviceSighting[] = []
  readonly drops: string[] = []
  private waiters: Array<() => void> = []

  async reading (reading: Reading): Promise<IngestResult> {
    this.readings.push(reading)
    this.notify()
    return { status: 'stored', profile_id: 'p1' }
  }

  status (status: SourceStatus): void { this.statuses.push(status); this.notify() }
  device (sighting: DeviceSighting): void { this.devices.push(sighting); this.notify() }
  dropped (reason: string): void { this.drops.push(reason); this.notify() }

  bpms (): number[] { return this.readings.map(r => r.heart_rate) }
  states (): string[] { return this.statuses.map(s => s.state) }

  /**
   * Resolves once `done()` holds, re-checked on every event the sink gets.
   * The timeout is only a guard against a hang (generous: the machine is shared).
   */
  waitFor (done: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    if (done()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter(w => w !== check)
        reject(new Error(`timed out waiting for ${what}; readings ${JSON.stringify(this.bpms())}, drops ${JSON.stringify(this.drops)}, states ${JSON.stringify(this.states())}`))
      }, timeoutMs)
      const check = (): void => {
        if (!done()) return
        clearTimeout(timer)
        this.waiters = this.waiters.filter(w => w !== check)
        resolve()
      }
      this.waiters.push(check)
    })
  }

  private notify (): void {
    for (const w of [...this.waiters]) w()
  }
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
