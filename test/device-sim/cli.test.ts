// `hr-relay sim` as a command: options, plain output when not on a TTY, and
// the load generator's JSON counts.
import t from 'tap'
import { PassThrough } from 'node:stream'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runSim } from '../../device-sim/cli.ts'
import { startBroker } from './aedes-harness.ts'

function capture (): { stream: PassThrough, text: () => string } {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', c => { text += c.toString() })
  return { stream, text: () => text }
}

t.test('bad options are refused with exit code 2 and a reason', async t => {
  for (const argv of [['teleport'], ['serial', '--count', '0'], ['serial', '--drop', 'often'], ['serial', '--format', 'morse'], ['mqtt'], ['serial', '--scenario', '/nope.json']]) {
    const out = capture(); const err = capture()
    const code = await runSim(argv, { out: out.stream, err: err.stream })
    t.equal(code, argv[0] === 'serial' && argv[1] === '--scenario' ? 1 : 2, argv.join(' '))
    t.match(err.text(), /hr-relay sim: /)
  }
})

t.test('serial run: prints the relay ports, then plain log lines and a summary', async t => {
  const out = capture(); const err = capture()
  const code = await runSim(['serial', '--count', '2', '--duration', '3', '--garbage', '1@1', '--seed', '4'], { out: out.stream, err: err.stream })
  t.equal(code, 0, err.text())
  t.match(out.text(), /serial device sim-serial-1 \(Ana, framed\): relay port \S+\/relay/)
  t.match(out.text(), /relay configuration: \{"serial":\[\{"path":/)
  t.match(out.text(), /fault garbage injected on sim-serial-2/)
  t.match(out.text(), /sim-serial-1 bpm=\d+ sent=3 delivered=3 state=up faults=garbage:2/)
})

t.test('mqtt --stats-json prints exact counts', async t => {
  const broker = await startBroker(t)
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-sim-cli-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'devices.json')
  await writeFile(file, JSON.stringify(Array.from({ length: 20 }, (_v, i) => ({ device_id: `c-${i}`, mqtt_username: `c-${i}`, mqtt_password: 'pw' }))))
  const out = capture(); const err = capture()
  const code = await runSim(['mqtt', '--count', '20', '--qos', '1', '--duration', '2', '--stats-json', '--url', broker.url, '--credentials', file], { out: out.stream, err: err.stream })
  t.equal(code, 0, err.text())
  const stats = JSON.parse(out.text())
  t.same({ devices: stats.devices, connected: stats.connected, sent: stats.sent, acked: stats.acked, failed: stats.failed, in_flight: stats.in_flight }, { devices: 20, connected: 20, sent: 40, acked: 40, failed: 0, in_flight: 0 })
  t.equal(broker.received.length, 40)
})
