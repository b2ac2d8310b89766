// Worker: the simulator's MQTT load generator (device-sim/load.ts) in its own
// process, for scenarios that need counts rather than per-message timing.
import { runLoad, type LoadStats } from '../../device-sim/load.ts'
import type { DeviceCredentials } from '../../device-sim/admin-client.ts'
import { serve } from '../lib/proc.ts'

async function run (port: number, credentials: DeviceCredentials[], durationS: number): Promise<LoadStats> {
  return await runLoad({ url: `mqtt://127.0.0.1:${port}`, credentials, durationS, rateHz: 1, qos: 1, connectConcurrency: 8, drainTimeoutMs: 10_000 })
}

serve({ run })
