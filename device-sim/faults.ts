// Fault schedules: which faults a device shows during a tick. Faults come
// from scenario steps (`faults` in a scenario file) and from CLI flags; both
// are FaultSpec values. The schedule is a pure function of time, so a run is
// as reproducible as its physiology.
//
//   drop          the link drops (BLE: the strap goes out of range and refuses
//                 to reconnect; MQTT: the connection ends; serial/HTTP: silence)
//                 for duration_s, then returns
//   unplug        the device disappears (serial: the pty goes away; BLE: the
//                 strap is removed from BlueZ; MQTT: the socket is cut without
//                 DISCONNECT) for duration_s, then comes back
//   contact_lost  the strap reports 0 bpm, no skin contact, no RR, for duration_s
//   skew          the device's timestamps are off by skew_ms (MQTT/HTTP carry them)
//   garbage       a line/payload/notification that is not a reading
//   bad_checksum  a framed line whose checksum is wrong
//   oversized     a line/payload/notification longer than any limit
//   burst         `count` readings sent back to back (a device flushing a backlog)
import { SimError } from './errors.ts'
import { FAULT_KINDS, type FaultKind, type FaultSpec } from './scenario.ts'

export type InstantFaultKind = 'garbage' | 'bad_checksum' | 'oversized' | 'burst'
export type LinkFaultKind = 'drop' | 'unplug'

export interface TickFaults {
  /** The link is down for this tick (and why); nothing is sent. */
  down: LinkFaultKind | null
  contactLost: boolean
  skewMs: number
  events: Array<{ kind: InstantFaultKind, count: number }>
}

export const DEFAULT_DURATION_S = 5
export const DEFAULT_BURST = 10

function applies (spec: FaultSpec, device: number): boolean {
  return spec.devices === undefined || spec.devices.includes(device)
}

function firstAt (spec: FaultSpec): number {
  return spec.at_s ?? (spec.kind === 'skew' ? 0 : spec.every_s ?? 0)
}

/** Is a fault lasting `duration` active at time t (s)? */
function activeAt (spec: FaultSpec, t: number, duration: number): boolean {
  const start = firstAt(spec)
  if (t < start) return false
  const since = spec.every_s === undefined ? t - start : (t - start) % spec.every_s
  return since < duration
}

/** How many occurrences fall in [from, to) seconds. */
function occurrences (spec: FaultSpec, from: number, to: number): number {
  const start = firstAt(spec)
  if (spec.every_s === undefined) return start >= from && start < to ? 1 : 0
  const first = Math.max(0, Math.ceil((from - start) / spec.every_s - 1e-9))
  const last = Math.ceil((to - start) / spec.every_s - 1e-9) - 1
  return Math.max(0, last - first + 1)
}

/** The faults device `device` shows during the tick [from, to) seconds. */
export function faultsAt (specs: readonly FaultSpec[], device: number, from: number, to: number): TickFaults {
  const out: TickFaults = { down: null, contactLost: false, skewMs: 0, events: [] }
  for (const spec of specs) {
    if (!applies(spec, device)) continue
    switch (spec.kind) {
      case 'drop': case 'unplug':
        if (activeAt(spec, from, spec.duration_s ?? DEFAULT_DURATION_S)) out.down = out.down === 'unplug' ? 'unplug' : spec.kind
        break
      case 'contact_lost':
        if (activeAt(spec, from, spec.duration_s ?? DEFAULT_DURATION_S)) out.contactLost = true
        break
      case 'skew':
        if (activeAt(spec, from, spec.duration_s ?? Infinity)) out.skewMs += spec.skew_ms ?? 0
        break
      default: {
        const n = occurrences(spec, from, to)
        const per = spec.kind === 'burst' ? spec.count ?? DEFAULT_BURST : spec.count ?? 1
        for (let i = 0; i < n; i++) out.events.push({ kind: spec.kind, count: per })
      }
    }
  }
  return out
}

/**
 * A CLI flag value as a fault: `--drop 30/5` (every 30 s, for 5 s), `--garbage 10`
 * (every 10 s), `--burst 60/20` (every 60 s, 20 readings), `--skew 5000` (ms, from the start),
 * `--skew -3000@30/10` (ms, from 30 s, for 10 s). `@at` is accepted on every flag.
 */
export function parseFaultFlag (kind: FaultKind, value: string, devices?: number[]): FaultSpec {
  const bad = (): never => { throw new SimError('bad_option', `--${kind.replace('_', '-')} ${JSON.stringify(value)}: expected ${kind === 'skew' ? 'MS[@AT][/DURATION]' : 'EVERY[/N][@AT]'}`) }
  const m = /^(-?\d+(?:\.\d+)?)(?:@(\d+(?:\.\d+)?))?(?:\/(\d+(?:\.\d+)?))?(?:@(\d+(?:\.\d+)?))?$/.exec(value.trim())
  if (m === null) return bad()
  const main = Number(m[1])
  const at = m[2] ?? m[4]
  const second = m[3] === undefined ? undefined : Number(m[3])
  const spec: FaultSpec = { kind }
  if (at !== undefined) spec.at_s = Number(at)
  if (devices !== undefined) spec.devices = devices
  if (kind === 'skew') {
    if (!Number.isInteger(main)) return bad()
    spec.skew_ms = main
    if (second !== undefined) spec.duration_s = second
    return spec
  }
  if (!(main > 0)) return bad()
  spec.every_s = main
  if (second !== undefined) {
    if (!(second > 0)) return bad()
    if (kind === 'burst' || kind === 'garbage' || kind === 'bad_checksum' || kind === 'oversized') {
      if (!Number.isInteger(second)) return bad()
      spec.count = second
    } else {
      spec.duration_s = second
    }
  }
  if (spec.duration_s !== undefined && spec.duration_s >= main) {
    throw new SimError('bad_option', `--${kind.replace('_', '-')} ${value}: the duration must be shorter than the period`)
  }
  return spec
}

export const FAULT_FLAGS: ReadonlyArray<{ flag: string, kind: FaultKind }> = FAULT_KINDS.map(kind => ({ flag: kind.replace('_', '-'), kind }))
