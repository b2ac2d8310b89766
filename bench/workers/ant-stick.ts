// Worker: one simulated ANT USB stick (device-sim/ant/stick.ts) on a pty pair
// (socat), with N heart-rate straps broadcasting their pages at the strap
// period once the relay has set the stick up. Each strap beats once every six
// page periods (about 41 bpm): its pages with a new beat are then five pages or
// more apart (timer drift moves the beat against the pages), always more than a
// second, so the relay (at most one reading a second) turns each such page into
// a reading; with beats every five periods, a drift to four pages apart made it
// wait for the next page. The computed heart rate is a per-strap sequence (40, 41, ...),
// so a receipt is matched by (strap, bpm) to the first page that carried the
// new beat: the send time is when that page was written to the pty.
import { openPtyPair, type PtyPair } from '../../device-sim/serial/pty.ts'
import { AntStickSim, STRAP_PERIOD_MS } from '../../device-sim/ant/stick.ts'
import { now, serve } from '../lib/proc.ts'

/** The straps' ANT device numbers: strap i is 31000 + i (device id ant:<n>). */
export const ANT_FIRST_DEVICE_NUMBER = 31000
const BEAT_MS = 6 * STRAP_PERIOD_MS

let pair: PtyPair | undefined
let stick: AntStickSim | undefined
let count = 0
let feeding: NodeJS.Timeout | undefined
let step = 0
/** While recording: `${strap}:${bpm}` → when the first page with that beat was written. */
let sends: Map<string, number> | undefined
const lastCount = new Map<number, number>()

function attach (s: AntStickSim): void {
  s.onBroadcast = (deviceNumber, beatCount, heartRate) => {
    const i = deviceNumber - ANT_FIRST_DEVICE_NUMBER
    const previous = lastCount.get(i)
    if (previous === beatCount) return
    lastCount.set(i, beatCount)
    // A strap's first page (after start or a re-plug) tells when its last beat was, not that there is a new one.
    if (previous === undefined) return
    const key = `${i}:${heartRate}`
    if (sends !== undefined && !sends.has(key)) sends.set(key, now())
  }
}

async function openStick (): Promise<void> {
  const p = pair as PtyPair
  const s = new AntStickSim({ path: p.devicePath })
  for (let i = 0; i < count; i++) s.addStrap({ deviceNumber: ANT_FIRST_DEVICE_NUMBER + i, rssi: -50 - (i % 20), batteryPercent: 80 })
  attach(s)
  await s.open()
  stick = s
  lastCount.clear()
}

/** Opens the pair and the stick with n straps; returns the path the relay opens and the straps' device ids. */
async function start (n: number): Promise<{ path: string, deviceIds: string[] }> {
  count = n
  pair = await openPtyPair()
  await openStick()
  // Every strap beats at the same rate; its rate byte steps each beat.
  const feed = (): void => {
    const bpm = 40 + step % 200
    step++
    for (let i = 0; i < count; i++) stick?.beats(ANT_FIRST_DEVICE_NUMBER + i, bpm, [BEAT_MS])
  }
  feed()
  feeding = setInterval(feed, BEAT_MS)
  return { path: pair.relayPath, deviceIds: Array.from({ length: n }, (_, i) => `ant:${ANT_FIRST_DEVICE_NUMBER + i}`) }
}

/** True once the relay has opened scan mode (or a channel) on the stick. */
function receiving (): boolean { return stick?.receiving === true }

/** Starts recording the pages with a new beat. */
function record (): void { sends = new Map() }

/** Stops recording; returns what was sent since record(). */
function sent (): Map<string, number> {
  const out = sends ?? new Map<string, number>()
  sends = undefined
  return out
}

/** The stick pulled out: the pty pair ends (the relay's port gets EIO); nothing is sent until plug(). */
async function unplug (): Promise<void> {
  await stick?.close()
  stick = undefined
  await pair?.unplug()
}

/** The stick put back at the same path; the relay must reopen it and set it up again. */
async function plug (): Promise<void> {
  await pair?.plug()
  await openStick()
}

async function stop (): Promise<void> {
  clearInterval(feeding)
  feeding = undefined
  await stick?.close()
  await pair?.close()
  stick = undefined; pair = undefined
}

serve({ start, receiving, record, sent, unplug, plug, stop })
