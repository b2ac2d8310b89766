// class: a gym class of 40 straps on one box, as issue 40 sets it: 20 ANT+
// straps through one simulated ANT stick (a pty, the stick's serial protocol)
// and 20 BLE straps over 4 emulated adapters (private dbus-daemon, node-ble),
// each adapter refusing a 7th link and silent above 5, so the relay must
// spread the straps and move the silent ones. hr-relay runs as pi-profile runs
// it: one core (taskset -c 0), a 256 MB V8 heap, the unit's environment. One
// WebSocket viewer per member stands in for the room display.
//
// Phases: (1) pair every strap and time until each one's first reading
// reaches its viewer; (2) a quiet window: strap → viewer latency per radio,
// readings lost, CPU per reading; (3) a window with faults: an adapter is
// unplugged and plugged back, and the stick is pulled out and put back. A
// reading counts as sent when the radio delivered it (an ANT page written while
// the stick is in; a BLE notification on a live, not silent, link); lost = sent
// and never shown. Reference: the straps' own send times (the radio's side),
// measured in the same run; the targets are absolute.
import { availableParallelism } from 'node:os'
import { addDevice, createUsers } from './lib/admin.ts'
import { cpuOf, ticksPerSecond } from './lib/cpu.ts'
import { allCpus, pinProcess } from './lib/hog.ts'
import { byRate, receiptsWhenComplete } from './lib/latency.ts'
import { bothOrNeither, Worker } from './lib/proc.ts'
import { figure, type Figure } from './lib/results.ts'
import { sleep, type Context, type Outcome, type Scenario } from './lib/scenario.ts'
import { startServer } from './lib/server.ts'
import { joinLatencies, summarize } from './lib/stats.ts'
import { CLASS_P99_MS, classStreamingTarget, p99Target } from './lib/targets.ts'
import { serviceEnvironment } from './lib/unit-env.ts'
import { openViewers, viewersFor } from './lib/viewers.ts'
import type { Receipts } from './workers/ws-viewers.ts'

const SERVER_CPUS = '0'
const ADAPTERS = 4
const MAX_CONNECTIONS = 6
const SILENT_ABOVE = 5
/** A network key of 8 bytes for the simulated stick (it accepts any; a real one needs the ANT+ key). */
const SIM_NETWORK_KEY = '0123456789abcdef'

function workerCpus (): string {
  return availableParallelism() > 1 ? `1-${availableParallelism() - 1}` : '0'
}

/** The first receipt of each viewer label: `label → time`. */
function firstByLabel (r: Receipts): Map<number, number> {
  const m = new Map<number, number>()
  for (let k = 0; k < r.times.length; k++) {
    const label = r.labels[k] as number
    if (!m.has(label)) m.set(label, r.times[k] as number)
  }
  return m
}

/** Receipts keyed as the senders key them: `${label}:${bpm}` → first receipt time. */
/** BLE strap i is viewer label n + i: its sends rekeyed. */
function shifted (sends: Map<string, number>, by: number): Map<string, number> {
  const out = new Map<string, number>()
  for (const [k, t] of sends) {
    const [i, bpm] = k.split(':')
    out.set(`${Number(i) + by}:${bpm as string}`, t)
  }
  return out
}

interface Window { ant: Map<string, number>, ble: Map<string, number>, receipts: Receipts, cpuMicros: number, startedAt: number, faultTimes: number[] }

export const classScenario: Scenario = {
  name: 'class',
  reference: 'the straps\' own send times (an ANT page written to the stick, a BLE notification on a live link), in the same run',
  async run (ctx: Context): Promise<Outcome> {
    const perRadio = ctx.quick ? 4 : 20
    const adapters = ctx.quick ? 2 : ADAPTERS
    const windowMs = ctx.quick ? 3000 : 20_000
    const unitEnv = await serviceEnvironment()
    const [antWorker, bleWorker] = await bothOrNeither(Worker.start('workers/ant-stick.ts'), Worker.start('workers/ble-straps.ts'))
    let viewers: Worker
    try {
      viewers = await Worker.start('workers/ws-viewers.ts')
    } catch (err) {
      await bleWorker.stop(); await antWorker.stop()
      throw err
    }
    const notes: string[] = []
    try {
      const stick = await antWorker.call<{ path: string, deviceIds: string[] }>('start', perRadio)
      const ble = await bleWorker.call<{ busAddress: string, addresses: string[], adapterNames: string[] }>('start', perRadio, { adapters, maxConnections: MAX_CONNECTIONS, silentAbove: SILENT_ABOVE })
      const server = await startServer({
        cpus: SERVER_CPUS,
        nodeOptions: ['--max-old-space-size=256'],
        env: { ...unitEnv, HR_RELAY_BLE: '1', DBUS_SYSTEM_BUS_ADDRESS: ble.busAddress },
        config: {
          ant: [{ path: stick.path, network_key: SIM_NETWORK_KEY }],
          ble: { adapters: ble.adapterNames.map(name => ({ name, max_connections: MAX_CONNECTIONS })) }
        },
        ...(ctx.cpuProfileDir === undefined ? {} : { cpuProfileDir: ctx.cpuProfileDir })
      })
      notes.push(`hr-relay: taskset -c ${SERVER_CPUS}, node --max-old-space-size=256, ${Object.entries(unitEnv).map(([k, v]) => `${k}=${v}`).join(' ')}; straps, emulator and viewers on CPUs ${workerCpus()}`)
      await Promise.all([antWorker.pid, bleWorker.pid, viewers.pid].map(async pid => { await pinProcess(pid, workerCpus()) }))
      try {
        // (1) Pair every strap to its own member, then time until each member's viewer shows a reading.
        const users = await createUsers(server, 2 * perRadio, 'class')
        await openViewers(viewers, viewersFor(server.url, users))
        await viewers.call('start')
        const paired = Date.now()
        for (let i = 0; i < perRadio; i++) await addDevice(server, stick.deviceIds[i] as string, (users[i] as { username: string }).username, 'ant')
        for (let i = 0; i < perRadio; i++) await addDevice(server, ble.addresses[i] as string, (users[perRadio + i] as { username: string }).username, 'ble')
        const streamDeadline = paired + 60_000
        let first = new Map<number, number>()
        const notifying = bleWorker.call<unknown>('notifyUntilStopped', 1)
        notifying.catch(() => {}) // awaited below
        while (Date.now() < streamDeadline) {
          first = firstByLabel(await viewers.call<Receipts>('peek'))
          if (first.size >= 2 * perRadio) break
          await sleep(250)
        }
        await bleWorker.call('stopNotifying'); await notifying
        await viewers.call('collect')
        const streaming = first.size
        const lastFirst = Math.max(...first.values())
        const allStreamingS = streaming === 2 * perRadio ? (lastFirst - paired) / 1000 : Number.POSITIVE_INFINITY
        const byRadio = (from: number): number => [...first.keys()].filter(l => l >= from && l < from + perRadio).length
        notes.push(`streaming after pairing: ${byRadio(0)}/${perRadio} ANT+, ${byRadio(perRadio)}/${perRadio} BLE; BLE links per adapter: ${JSON.stringify(await bleWorker.call('links'))}`)

        // (2) and (3): a window of readings, quiet or with the faults in it.
        const hz = ticksPerSecond()
        const window = async (faults: boolean): Promise<Window> => {
          await antWorker.call('record')
          await viewers.call('start')
          const startedAt = Date.now()
          const faultTimes: number[] = []
          const before = await cpuOf(server.pid)
          const ble = bleWorker.call<{ sends: Map<string, number>, skipped: number }>('notify', 1, windowMs)
          if (faults) {
            const victim = (await bleWorker.call<string[]>('adapterNames'))[adapters - 1] as string
            await sleep(windowMs / 8)
            await bleWorker.call('unplugAdapter', victim); faultTimes.push(Date.now() - startedAt)
            await sleep(windowMs / 8)
            await antWorker.call('unplug'); faultTimes.push(Date.now() - startedAt)
            await sleep(windowMs / 8)
            await antWorker.call('plug'); faultTimes.push(Date.now() - startedAt)
            await sleep(windowMs / 8)
            await bleWorker.call('plugAdapter', victim); faultTimes.push(Date.now() - startedAt)
          }
          const { sends } = await ble
          const ant = await antWorker.call<Map<string, number>>('sent')
          const bleSends = shifted(sends, perRadio)
          const after = await cpuOf(server.pid)
          const all = new Map([...ant, ...bleSends])
          const [receipts] = await receiptsWhenComplete([viewers], all.size, rs => joinLatencies(all, byRate(rs[0] as Receipts)).lost.length, 2000)
          const cpuMicros = (after.user - before.user + after.system - before.system) * 1e6 / hz
          return { ant, ble: bleSends, receipts: receipts as Receipts, cpuMicros, startedAt, faultTimes }
        }
        const quiet = await window(false)
        const faulty = await window(true)

        const received = (w: Window, sends: Map<string, number>): ReturnType<typeof joinLatencies> => joinLatencies(sends, byRate(w.receipts))
        const qAnt = received(quiet, quiet.ant); const qBle = received(quiet, quiet.ble)
        const fAnt = received(faulty, faulty.ant); const fBle = received(faulty, faulty.ble)
        const antP = summarize(qAnt.latencies); const bleP = summarize(qBle.latencies)
        const readings = qAnt.latencies.length + qBle.latencies.length
        const lostQuiet = qAnt.lost.length + qBle.lost.length
        const lostFaults = fAnt.lost.length + fBle.lost.length
        if (lostFaults > 0) {
          const at = (sends: Map<string, number>, keys: string[]): string => keys.map(k => `${k} at ${Math.round((sends.get(k) ?? 0) - faulty.startedAt)} ms`).join(', ')
          notes.push(`lost across the faults (strap:bpm, sent at; the adapter out at ${faulty.faultTimes[0] ?? '?'} ms and back at ${faulty.faultTimes[3] ?? '?'} ms, the stick out at ${faulty.faultTimes[1] ?? '?'} ms and back at ${faulty.faultTimes[2] ?? '?'} ms): ANT+ ${at(faulty.ant, fAnt.lost)}; BLE ${at(faulty.ble, fBle.lost)}`)
        }
        notes.push(`quiet window ${windowMs / 1000} s: ${quiet.ant.size} ANT+ and ${quiet.ble.size} BLE readings sent; with faults: ${faulty.ant.size} and ${faulty.ble.size} (an adapter out for ${(3 * windowMs / 8 / 1000).toFixed(1)} s, the stick out for ${(windowMs / 8 / 1000).toFixed(1)} s)`)
        const figures: Figure[] = [
          figure(`straps streaming, of ${2 * perRadio}`, streaming, 'straps', undefined, { text: `all ${2 * perRadio}`, met: streaming === 2 * perRadio }),
          figure('pairing → every strap on its display', allStreamingS, 's', undefined, classStreamingTarget(allStreamingS, streaming, 2 * perRadio)),
          figure(`p99 ANT+ page → display, ${perRadio} straps, one core`, antP.p99, 'ms', { name: 'p50', value: antP.p50 }, p99Target(antP.p99, CLASS_P99_MS)),
          figure(`p99 BLE notification → display, ${perRadio} straps over ${adapters} adapters, one core`, bleP.p99, 'ms', { name: 'p50', value: bleP.p50 }, p99Target(bleP.p99, CLASS_P99_MS)),
          figure('readings lost, quiet window', lostQuiet, 'readings', undefined, { text: 'none', met: lostQuiet === 0 }),
          figure('readings lost across an unplugged adapter and an unplugged stick', lostFaults, 'readings', undefined, { text: 'none', met: lostFaults === 0 }),
          figure('server CPU per reading, quiet window (one core)', readings > 0 ? quiet.cpuMicros / readings : Number.NaN, 'µs')
        ]
        return { figures, lost: lostQuiet + lostFaults, notes }
      } finally {
        await Promise.all([antWorker.pid, bleWorker.pid, viewers.pid].map(async pid => { await pinProcess(pid, allCpus()).catch(() => {}) }))
        await server.stop()
      }
    } finally {
      await viewers.stop(); await bleWorker.stop(); await antWorker.stop()
    }
  }
}
