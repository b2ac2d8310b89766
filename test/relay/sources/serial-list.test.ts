import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import { listSerialPorts } from '../../../relay/sources/serial.ts'

t.test('listing without udevadm returns [] with a warning instead of crashing', async t => {
  const empty = await mkdtemp(join(tmpdir(), 'hr-relay-nopath-'))
  const savedPath = process.env.PATH
  t.teardown(async () => { process.env.PATH = savedPath; await rm(empty, { recursive: true, force: true }) })
  process.env.PATH = empty
  const lines: Array<{ level: number, msg: string, component: string }> = []
  const logger = pino({ level: 'info' }, new Writable({
    write (chunk: Buffer, _enc, cb) { lines.push(JSON.parse(chunk.toString('utf8'))); cb() }
  }))
  t.same(await listSerialPorts(logger), [])
  t.equal(lines.length, 1)
  t.match(lines[0], { level: 40, component: 'serial', msg: /udevadm is not installed/ })
})
