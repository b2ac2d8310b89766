// A pino logger that keeps its JSON lines, so that a rig can read the delays
// a source logged before it reopened a device.
import { Writable } from 'node:stream'
import pino from 'pino'

export function recordingLogger (): { logger: pino.Logger, lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      cb()
    }
  })
  return { logger: pino({ level: 'debug' }, stream), lines }
}
