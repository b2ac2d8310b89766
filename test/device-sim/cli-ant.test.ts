// `hr-relay sim ant --straps N` against the whole service: the command prints the simulated stick's pty path, the
// relay opens it as its `ant` stick, and the straps (paired with --kind ant) stream with RR intervals. The command's
// fault flags reach the relay: --drop takes one strap out of range for 6 s (the relay reports it gone and back),
// --unplug pulls the stick out for 3 s (the relay's ANT source is degraded, reopens and configures the stick again).
import t from 'tap'
import { PassThrough } from 'node:stream'
import { runSim } from '../../device-sim/cli.ts'
import { runMain } from '../helpers/cli.ts'
import { startTestService } from '../helpers/service.ts'
import { until } from '../helpers/wait.ts'

interface Health { id: string, state: string, detail?: string, connected?: number }

t.test('sim ant --straps 2 streams into the relay; --drop and --unplug are seen there', async t => {
  const out = new PassThrough()
  let text = ''
  out.on('data', c => { text += c.toString() })
  const err = new PassThrough()
  let errText = ''
  err.on('data', c => { errText += c.toString() })
  const ac = new AbortController()
  // Strap 1 walks out of range from 4 s to 10 s; its unplug (--fault-devices applies to every fault flag) pulls the
  // whole stick out from 16 s to 19 s.
  const running = runSim(['ant', '--straps', '2', '--seed', '3', '--drop', '60/6@4', '--fault-devices', '1', '--unplug', '60/3@16'], { out, err, signal: ac.signal })
  t.teardown(async () => { ac.abort(); await running })
  await until('the stick\'s path', () => /ANT stick: relay port (\S+)/.test(text) || errText !== '', 30_000)
  const path = (/ANT stick: relay port (\S+)/.exec(text) as RegExpExecArray)[1] as string
  t.match(text, /ANT\+ strap ant:12289 \(Ana\): pair with {2}hr-relay admin device pair <username> --kind ant --device-id ant:12289/)
  t.match(text, /ANT\+ strap ant:12290 \(Ben\)/)
  t.match(text, new RegExp(`relay configuration: \\{"ant":\\[\\{"path":"${path}","network_key":"<the ANT\\+ network key, 16 hex digits>"\\}\\]\\}`))

  const svc = await startTestService(t, { ant: [{ path, network_key: 'a0b1c2d3e4f50617' }] })
  t.teardown(() => svc.stop())
  const id = `ant:${path}`
  const health = async (): Promise<Health | undefined> => ((await (await fetch(`${svc.url}/health`)).json()) as { sources: Health[] }).sources.find(s => s.id === id)
  for (const [username, deviceId] of [['ana', 'ant:12289'], ['ben', 'ant:12290']]) {
    await svc.user(username as string)
    const r = await runMain(['admin', 'device', 'pair', username as string, '--kind', 'ant', '--device-id', deviceId as string, '--data-dir', svc.dataDir])
    t.equal(r.code, 0, r.stderr)
  }
  const stored = async (u: string): Promise<Array<{ heart_rate: number, source: string, rr_intervals_ms?: number[] }>> => (await svc.admin('GET', `/admin/readings/${u}`)).readings
  await until('both straps stored with RR intervals', async () => {
    const [a, b] = [await stored('ana'), await stored('ben')]
    return a.some(r => (r.rr_intervals_ms?.length ?? 0) > 0) && b.some(r => (r.rr_intervals_ms?.length ?? 0) > 0)
  })
  for (const u of ['ana', 'ben']) {
    const got = await stored(u)
    t.ok(got.every(r => r.source === 'ant' && r.heart_rate >= 40 && r.heart_rate <= 220), `${u}: ANT readings of the simulated physiology`)
    // The physiology's RR intervals fit its rate: each beat between 250 and 1500 ms.
    t.ok(got.flatMap(r => r.rr_intervals_ms ?? []).every(v => v >= 250 && v <= 1500), `${u}: RR intervals`)
  }

  await until('Ben out of range', async () => (await health())?.connected === 1)
  await until('Ben back in range', async () => (await health())?.connected === 2)
  await until('the stick pulled out', async () => (await health())?.state === 'degraded')
  t.match(await health(), { state: 'degraded', connected: 0, detail: /reopening/ })
  const before = (await stored('ana')).length
  await until('the stick back, configured, both straps heard', async () => {
    const h = await health()
    return h?.state === 'running' && h.connected === 2 && (await stored('ana')).length > before
  })
  t.match(await health(), { state: 'running', detail: 'continuous scan mode', connected: 2 })
  t.match(text, /link down \(drop\) ant:12290/)
  t.match(text, /link down \(unplug\) ant:12290/)
})
