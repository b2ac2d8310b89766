// Opening WebSocket viewers and MQTT devices in their worker processes, with
// missing routes and a missing broker reported as missing dependencies.
import { DependencyMissing } from './errors.ts'
import type { Worker } from './proc.ts'
import type { Viewer } from '../workers/ws-viewers.ts'
import type { BenchUser } from './admin.ts'
import { wsUrl } from './scenario.ts'

export const REAL_TIME = '/api/v1/data/real_time'

export function viewersFor (httpUrl: string, users: readonly BenchUser[], perUser = 1): Viewer[] {
  const out: Viewer[] = []
  users.forEach((u, i) => {
    for (let k = 0; k < perUser; k++) out.push({ url: wsUrl(httpUrl, `${REAL_TIME}?access_token=${u.token}`), label: i })
  })
  return out
}

export async function openViewers (worker: Worker, viewers: Viewer[]): Promise<void> {
  try {
    await worker.call('open', viewers)
  } catch (err) {
    if (/answered HTTP 404/.test((err as Error).message)) throw new DependencyMissing(`WebSocket ${REAL_TIME}`, (err as Error).message)
    throw err
  }
}
