// ble-path: straps on the BlueZ emulator (private dbus-daemon) → hr-relay's
// BLE source (node-ble) → pipeline → WebSocket viewer, one viewer per user.
// Latency from the strap's notification to the WebSocket receipt. Reference:
// a bare node-ble client subscribed to the same straps (D-Bus and node-ble
// without hr-relay). Matching is by (strap, bpm): BLE carries no timestamp.
import { addDevice, createUsers } from './lib/admin.ts'
import { DependencyMissing } from './lib/errors.ts'
import { bothOrNeither, Worker } from './lib/proc.ts'
import { figure } from './lib/results.ts'
import { type Context, type Outcome, type Scenario } from './lib/scenario.ts'
import { startServer, type BenchServer, type StartOptions } from './lib/server.ts'
import { joinLatencies, summarize, type Summary } from './lib/stats.ts'
import { openViewers, viewersFor } from './lib/viewers.ts'
import { byRate, receiptsWhenComplete } from './lib/latency.ts'
import type { Receipts } from './workers/ws-viewers.ts'

async function measure (straps: Worker, receiver: Worker, windowMs: number): Promise<{ summary: Summary, lost: number, sent: number, skipped: number }> {
  await straps.call('notify', 1, Math.min(1000, windowMs / 4))
  await receiver.call('start')
  const { sends, skipped } = await straps.call<{ sends: Map<string, number>, skipped: number }>('notify', 1, windowMs)
  // Stragglers: until every notification arrived, at most min(1.5 s, half the window).
  const [receipts] = await receiptsWhenComplete([receiver], sends.size, rs => joinLatencies(sends, byRate(rs[0] as Receipts)).lost.length, Math.min(1500, windowMs / 2))
  const { latencies, lost } = joinLatencies(sends, byRate(receipts as Receipts))
  return { summary: summarize(latencies), lost: lost.length, sent: sends.size, skipped }
}

export const blePath: Scenario = {
  name: 'ble-path',
  reference: 'a bare node-ble client subscribed to the same emulated straps',
  async run (ctx: Context): Promise<Outcome> {
    const n = ctx.quick ? 2 : 20
    const windowMs = ctx.quick ? 1000 : 20_000
    // Reference first, on its own emulator (both emulators start at once; each path gets fresh straps).
    const [refStraps, straps] = await bothOrNeither(Worker.start('workers/ble-straps.ts'), Worker.start('workers/ble-straps.ts'))
    // One emulated adapter without a limit (the class scenario measures limits): the relay may hold all n straps on it.
    const serverOptions = (busAddress: string): StartOptions => ({
      env: { HR_RELAY_BLE: '1', DBUS_SYSTEM_BUS_ADDRESS: busAddress },
      config: { ble: { adapters: [{ name: 'hci0', max_connections: n }] } },
      ...(ctx.cpuProfileDir === undefined ? {} : { cpuProfileDir: ctx.cpuProfileDir })
    })
    // --quick starts hr-relay (no straps paired yet) while the reference client connects; full runs keep the reference alone on the machine.
    let early: { bus: { busAddress: string, addresses: string[] }, server: Promise<BenchServer> } | undefined
    let ref: Awaited<ReturnType<typeof measure>>
    try {
      if (ctx.quick) {
        const bus = await straps.call<{ busAddress: string, addresses: string[] }>('start', n)
        const server = startServer(serverOptions(bus.busAddress))
        server.catch(() => {}) // awaited below
        early = { bus, server }
      }
      let client: Worker | undefined
      try {
        const { busAddress, addresses } = await refStraps.call<{ busAddress: string, addresses: string[] }>('start', n)
        client = await Worker.start('workers/ble-client.ts', { DBUS_SYSTEM_BUS_ADDRESS: busAddress })
        await client.call('open', addresses)
        ref = await measure(refStraps, client, windowMs)
        await client.call('close')
      } finally {
        await client?.stop(); await refStraps.stop()
      }
    } catch (err) {
      await early?.server.then(async s => { await s.stop() }, () => {})
      await straps.stop()
      throw err
    }
    let viewers: Worker
    try {
      viewers = await Worker.start('workers/ws-viewers.ts')
    } catch (err) {
      await early?.server.then(async s => { await s.stop() }, () => {})
      await straps.stop()
      throw err
    }
    try {
      const { busAddress, addresses } = early?.bus ?? await straps.call<{ busAddress: string, addresses: string[] }>('start', n)
      const server = await (early?.server ?? startServer(serverOptions(busAddress)))
      try {
        const health = await (await fetch(`${server.url}/health`)).json() as { sources?: Array<{ id: string }> }
        if (!(health.sources ?? []).some(s => s.id === 'ble' || s.id.startsWith('ble'))) throw new DependencyMissing('BLE source in relay/main.ts', `/health lists no BLE source: ${JSON.stringify(health.sources ?? [])}`)
        const users = await createUsers(server, n, 'ble')
        for (const [i, u] of users.entries()) await addDevice(server, addresses[i] as string, u.username, 'ble')
        await openViewers(viewers, viewersFor(server.url, users))
        const subscribed = await straps.call<number>('waitNotifying', 60_000)
        if (subscribed < n) ctx.log(`ble-path: only ${subscribed}/${n} straps subscribed after 60 s`)
        const mine = await measure(straps, viewers, windowMs)
        return {
          figures: [
            figure(`p50 notification→WebSocket, ${n} straps`, mine.summary.p50, 'ms', { name: 'bare node-ble', value: ref.summary.p50 }),
            figure(`p99 notification→WebSocket, ${n} straps`, mine.summary.p99, 'ms', { name: 'bare node-ble', value: ref.summary.p99 }),
            figure(`readings lost, ${n} straps`, mine.lost, 'readings', undefined, { text: 'zero lost', met: mine.lost === 0 }),
            figure('straps subscribed by hr-relay', subscribed, 'straps', undefined, { text: `all ${n}`, met: subscribed === n })
          ],
          lost: mine.lost,
          notes: [`${mine.sent} notifications sent in ${windowMs / 1000} s (${mine.skipped} skipped: strap not subscribed); reference: ${ref.sent} sent, ${ref.lost} lost`]
        }
      } finally {
        await server.stop()
      }
    } finally {
      await viewers.stop(); await straps.stop()
    }
  }
}
