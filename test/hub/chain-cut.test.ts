// Issue 42 §3: a box cut off the broker for a minute keeps storing and acknowledging; once it reconnects, its
// upstream queue drains and the hub holds exactly what both boxes acknowledged. Also what the hub does with a
// box's erasure notice, and with a message that is not one of ours.
import t from 'tap'
import mqtt from 'mqtt'
import { setTimeout as delay } from 'node:timers/promises'
import { Chain, ROOT } from './chain-harness.ts'

const CUT_MS = 60_000

t.test('a box cut off for a minute, an erasure notice, a malformed message', async t => {
  const chain = await Chain.create(t, { hubs: 2, boxes: 2, membersPerBox: 2 })
  const [boxA] = chain.boxes as [typeof chain.boxes[0]]

  await t.test('cut off for a minute while its members train, then reconnected', async t => {
    boxA.proxy.cut()
    const started = Date.now()
    // Readings keep coming at both boxes during the cut, a burst every few seconds.
    while (Date.now() - started < CUT_MS) {
      t.equal(await chain.burst(20), 20 * 4)
      await delay(5000)
    }
    const queued = chain.boxes.map(b => b.service.service.services.health().find(h => h.id === 'upstream'))
    t.equal(queued[0]?.state, 'degraded', 'the cut box reports its upstream as degraded while it is off')
    boxA.proxy.restore()
    t.same(chain.compare(await chain.settle()), { missing: [], extra: [], twice: 0 })
  })

  await t.test('an erasure notice deletes what the hub holds of that member of that box, and stops redeliveries', async t => {
    const pid = boxA.profiles[0]!
    const before = Number((await chain.db.query('SELECT count(*) AS n FROM readings WHERE box_id = $1 AND profile_id = $2', [boxA.id, pid])).rows[0].n)
    t.ok(before > 0, `the hub held ${before} readings of the member`)
    const username = 'member0gyma'
    await boxA.service.admin('DELETE', `/admin/users/${username}`)
    for (const k of [...chain.acknowledged]) if (k.startsWith(`${boxA.id}|${pid}|`)) chain.acknowledged.delete(k)
    const end = Date.now() + 30_000
    let left = before
    while (left > 0 && Date.now() < end) {
      left = Number((await chain.db.query('SELECT count(*) AS n FROM readings WHERE box_id = $1 AND profile_id = $2', [boxA.id, pid])).rows[0].n)
      if (left > 0) await delay(50)
    }
    t.equal(left, 0, 'none of the member\'s readings are left at the hub')
    // A reading of theirs delivered again afterwards (a redelivery) is not stored: the instance that gets it
    // counts it with the duplicates (its INSERT inserted nothing).
    const duplicates = async (): Promise<number> => (await Promise.all(chain.hubs.map(async h => ((await (await fetch(`${h.url}/health`)).json()) as { duplicates_total: number }).duplicates_total))).reduce((a, b) => a + b, 0)
    const before2 = await duplicates()
    const late = mqtt.connect(chain.broker.url, { protocolVersion: 5, clientId: `late-${process.pid}` })
    t.teardown(() => { late.end(true) })
    await new Promise<void>(resolve => { late.once('connect', () => { resolve() }) })
    await late.publishAsync(`${ROOT}/boxes/${boxA.id}/users/${pid}/heart_rate`, JSON.stringify({ measured_at: Date.now() - 1000, data: { heart_rate: 99 }, source: 'ble' }), { qos: 1 })
    const end2 = Date.now() + 30_000
    while (await duplicates() < before2 + 1 && Date.now() < end2) await delay(50)
    t.equal(await duplicates(), before2 + 1, 'the late reading reached an instance')
    t.equal(Number((await chain.db.query('SELECT count(*) AS n FROM readings WHERE box_id = $1 AND profile_id = $2', [boxA.id, pid])).rows[0].n), 0, 'and was not stored')
    t.equal(await chain.burst(5), 5 * 3, 'the other members still train')
    t.same(chain.compare(await chain.settle()), { missing: [], extra: [], twice: 0 })
    const rows = await chain.db.query('SELECT box_id, erased_at FROM erasures')
    t.equal(rows.rowCount, 1)
    t.equal(rows.rows[0].box_id, boxA.id)
  })

  await t.test('a message that is not one of ours is acknowledged, counted and not stored', async t => {
    const bad = mqtt.connect(chain.broker.url, { protocolVersion: 5, clientId: `bad-${process.pid}` })
    t.teardown(() => { bad.end(true) })
    await new Promise<void>(resolve => { bad.once('connect', () => { resolve() }) })
    const topic = `${ROOT}/boxes/gym-z/users/someone/heart_rate`
    for (const payload of ['not json', '{"measured_at":1,"data":{"heart_rate":70},"source":"ble"}', '{"measured_at":1800000000000,"data":{"heart_rate":900},"source":"ble"}']) {
      await bad.publishAsync(topic, payload, { qos: 1 })
    }
    const end = Date.now() + 30_000
    let rejected = 0
    while (rejected < 3 && Date.now() < end) {
      const hs = await Promise.all(chain.hubs.map(async h => (await (await fetch(`${h.url}/health`)).json()) as { rejected_total: number }))
      rejected = hs.reduce((s, h) => s + h.rejected_total, 0)
      if (rejected < 3) await delay(50)
    }
    t.equal(rejected, 3, 'each refused once (acknowledged, so not sent again)')
    t.equal(Number((await chain.db.query("SELECT count(*) AS n FROM readings WHERE box_id = 'gym-z'")).rows[0].n), 0)
    // /health counts a refusal as it happens; its log line reaches this test through the instance's stdout after.
    const refusals = (): string[] => chain.hubs.flatMap(h => h.lines).filter(l => l.includes('message refused')).map(l => (JSON.parse(l) as { reason: string }).reason).sort()
    while (refusals().length < 3 && Date.now() < end) await delay(20)
    const reasons = refusals()
    t.same(reasons, ['/data/heart_rate must be an integer at most 300', '/measured_at must be between 946684800000 and 9999999999999', 'payload is not JSON'])
  })
})
