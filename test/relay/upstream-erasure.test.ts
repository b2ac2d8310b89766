// A member's erasure with an upstream broker (issue 41 §2, docs/integrations.md
// "Erasure notices"), against a real Mosquitto: the member's queued readings are
// dropped and an erasure notice is queued; while it waits (the broker is down)
// it is the one trace of the profile id on disk, and the username is already
// gone; once delivered (topic <prefix>/users/<profile_id>/erased, payload
// {"profile_id","erased_at"}), the store is rewritten and no file holds the
// profile id either.
import t from 'tap'
import mqtt from 'mqtt'
import { setTimeout as delay } from 'node:timers/promises'
import { Mosquitto } from '../helpers/mosquitto.ts'
import { startTestService } from '../helpers/service.ts'
import { filesContaining } from '../helpers/files-scan.ts'

const NAME = 'zqupstream4e9b1f7c'
const PREFIX = 'gym-9/hr-relay/v1'

/** Waits until no file under dir holds any of the texts (the rewrite after delivery runs in the background). */
async function untilNoFileHolds (dir: string, texts: string[], ms = 30_000): Promise<string[]> {
  const end = Date.now() + ms
  for (;;) {
    const found = await filesContaining(dir, texts)
    if (found.length === 0 || Date.now() > end) return found
    await delay(50)
  }
}

t.test('erasure with an upstream: queued readings dropped, a notice delivered, then no file holds the profile id', async t => {
  const mosquitto = await Mosquitto.create(t)
  await mosquitto.start()
  const notices: Array<{ topic: string, body: string }> = []
  const sub = mqtt.connect(mosquitto.url, { protocolVersion: 4, clientId: `erasure-watcher-${process.pid}`, clean: false, reconnectPeriod: 250 })
  sub.on('error', () => {})
  t.teardown(() => { sub.end(true) })
  await new Promise<void>(resolve => { sub.once('connect', () => { resolve() }) })
  t.equal((await sub.subscribeAsync(`${PREFIX}/users/+/erased`, { qos: 1 }))[0]?.qos, 1)
  const delivered = new Promise<void>(resolve => { sub.on('message', (topic, body) => { notices.push({ topic, body: body.toString() }); resolve() }) })

  const s = await startTestService(t, { upstream: { url: mosquitto.url, topic_prefix: PREFIX } })
  const pid = await s.user(NAME)
  await mosquitto.stop()
  const base = Date.now() - 60_000
  for (let i = 0; i < 5; i++) t.equal((await s.service.services.pipeline.submit({ profile_id: pid, measured_at: base + i * 1000, heart_rate: 80, source: 'http' })).status, 'stored')

  const t0 = Date.now()
  const answer = await s.admin('DELETE', `/admin/users/${NAME}`)
  t.equal(answer.erased.upstream_queue, 5, 'the queued readings were dropped')
  t.same(await filesContaining(s.dataDir, [NAME]), [], 'the username is in no file')
  t.not((await filesContaining(s.dataDir, [pid])).length, 0, 'the waiting notice holds the profile id')

  await mosquitto.start()
  await delivered
  t.equal(notices.length, 1)
  t.equal(notices[0]!.topic, `${PREFIX}/users/${pid}/erased`)
  const body = JSON.parse(notices[0]!.body) as { profile_id: string, erased_at: number }
  t.equal(body.profile_id, pid)
  t.ok(body.erased_at >= t0 && body.erased_at <= Date.now(), 'erased_at is the time of the erasure')
  t.same(Object.keys(body).sort(), ['erased_at', 'profile_id'])
  t.same(await untilNoFileHolds(s.dataDir, [pid, NAME]), [], 'once delivered, no file holds the profile id')
})
