// What the simulator shows while it runs. On a TTY: a table redrawn in place
// with plain ANSI escapes (current bpm per device, readings sent and
// delivered, faults injected, link state). Otherwise: one log line per fault
// and link change, and a summary line every `summaryEveryMs`.
import type { DeviceStats, SimEvent, Simulation } from './runner.ts'

const ESC = '\x1b['

function faultsText (s: DeviceStats): string {
  const parts = Object.entries(s.faults).map(([k, n]) => `${k}:${String(n)}`)
  return parts.length === 0 ? '-' : parts.join(' ')
}

function pad (text: string, width: number): string {
  return text.length >= width ? text.slice(0, width) : text + ' '.repeat(width - text.length)
}

/** The table the TTY view draws (exported for tests). */
export function renderTable (title: string, stats: DeviceStats[], elapsedMs: number): string {
  const lines = [
    `${title}   ${(elapsedMs / 1000).toFixed(0)} s   (Ctrl-C to stop)`,
    '',
    `${pad('device', 20)} ${pad('who', 10)} ${pad('bpm', 5)} ${pad('sent', 8)} ${pad('delivered', 10)} ${pad('state', 13)} faults`
  ]
  for (const s of stats) {
    lines.push(`${pad(s.device_id, 20)} ${pad(s.label, 10)} ${pad(s.bpm === null ? '--' : String(s.bpm), 5)} ${pad(String(s.sent), 8)} ${pad(String(s.delivered), 10)} ${pad(s.state, 13)} ${faultsText(s)}`)
  }
  const total = stats.reduce((a, s) => ({ sent: a.sent + s.sent, delivered: a.delivered + s.delivered, failed: a.failed + s.failed }), { sent: 0, delivered: 0, failed: 0 })
  lines.push('', `total: sent ${total.sent}, delivered ${total.delivered}, not delivered ${total.failed}`)
  return lines.join('\n')
}

/** A one-line plain log entry for an event, or null for events that are not logged. */
export function eventLine (sim: Simulation, ev: SimEvent): string | null {
  const id = (i: number): string => sim.stats[i]?.device_id ?? String(i)
  switch (ev.type) {
    case 'fault': return `${new Date().toISOString()} fault ${ev.kind} ${ev.outcome} on ${id(ev.device)} at +${(ev.at / 1000).toFixed(1)} s`
    case 'link': return `${new Date().toISOString()} link ${ev.up ? 'up' : 'down'} (${ev.kind}) ${id(ev.device)} at +${(ev.at / 1000).toFixed(1)} s`
    default: return null
  }
}

export interface ViewHandle { stop (): void }

export function attachView (sim: Simulation, out: NodeJS.WritableStream & { isTTY?: boolean }, title: string, summaryEveryMs = 10_000): ViewHandle {
  const started = Date.now()
  if (out.isTTY === true) {
    out.write(`${ESC}?25l`) // hide the cursor
    const draw = (): void => { out.write(`${ESC}H${ESC}2J` + renderTable(title, sim.stats, Date.now() - started) + '\n') }
    const timer = setInterval(draw, 500)
    draw()
    return {
      stop () {
        clearInterval(timer)
        draw()
        out.write(`${ESC}?25h`)
      }
    }
  }
  const onEvent = (ev: SimEvent): void => {
    const line = eventLine(sim, ev)
    if (line !== null) out.write(line + '\n')
  }
  sim.on('event', onEvent)
  const summary = (): void => {
    for (const s of sim.stats) out.write(`${new Date().toISOString()} ${s.device_id} bpm=${s.bpm ?? '--'} sent=${s.sent} delivered=${s.delivered} state=${s.state} faults=${faultsText(s)}\n`)
  }
  const timer = setInterval(summary, summaryEveryMs)
  timer.unref()
  return {
    stop () {
      clearInterval(timer)
      sim.off('event', onEvent)
      summary()
    }
  }
}
