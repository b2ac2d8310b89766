// Issue 42 §3, nothing lost and nothing doubled: two hub instances on a real PostgreSQL and a real Mosquitto
// (persistence on), two boxes whose upstream forwards what they store. After each fault during a burst, the hub
// holds exactly the readings the boxes acknowledged: every one, each once, and nothing else.
import t from 'tap'
import { shippedMigrations } from '../../hub/migrate.ts'
import { setTimeout as delay } from 'node:timers/promises'
import { Chain } from './chain-harness.ts'

const PER_MEMBER = 150

interface Health { status: string, postgres: string, stored_total: number }

/** Polls an instance's /health until `ok` holds (a state change the instance reports, not a fixed wait). */
async function untilHealth (url: string, ok: (h: Health) => boolean, ms = 30_000): Promise<Health> {
  const end = Date.now() + ms
  for (;;) {
    const h = await (await fetch(`${url}/health`)).json() as Health
    if (ok(h) || Date.now() > end) return h
    await delay(50)
  }
}

t.test('two instances, two boxes: exactly what the boxes acknowledged, through faults', async t => {
  const chain = await Chain.create(t, { hubs: 2, boxes: 2, membersPerBox: 2 })
  const [hubA, hubB] = chain.hubs as [typeof chain.hubs[0], typeof chain.hubs[0]]
  const migrations = (await chain.db.query<{ version: number }>('SELECT version FROM hub_schema_migrations ORDER BY version')).rows.map(r => r.version)
  t.same(migrations, (await shippedMigrations()).map(m => m.version), 'the instances started together and applied each migration once')

  await t.test('a quiet burst', async t => {
    t.equal(await chain.burst(PER_MEMBER), PER_MEMBER * 4, 'the boxes acknowledged every reading')
    t.same(chain.compare(await chain.settle()), { missing: [], extra: [], twice: 0 })
    const spread = await Promise.all([hubA, hubB].map(async h => (await (await fetch(`${h.url}/health`)).json()) as { stored_total: number, status: string }))
    t.same(spread.map(s => s.status), ['ok', 'ok'])
    t.ok(spread.every(s => s.stored_total > 0), `the shared subscription spread the readings over both instances (${spread.map(s => s.stored_total).join(' + ')})`)
  })

  await t.test('one instance killed with SIGKILL during a burst, then started again with its client id', async t => {
    const acked = await chain.burst(PER_MEMBER, async () => { hubA.kill() })
    t.equal(acked, PER_MEMBER * 4)
    // Mosquitto keeps the dead instance's share of the messages in its session; they come when it returns.
    await hubA.start()
    t.same(chain.compare(await chain.settle()), { missing: [], extra: [], twice: 0 })
  })

  await t.test('an instance killed while it holds messages it could not commit (PostgreSQL down)', async t => {
    const acked = await chain.burst(PER_MEMBER, async () => {
      await chain.pg.stop()
      // Until the instance reports a failed write, it has received messages and holds them uncommitted.
      await untilHealth(hubA.url, h => h.postgres === 'failing')
      hubA.kill()
      await chain.pg.start()
    })
    t.equal(acked, PER_MEMBER * 4)
    await hubA.start()
    t.same(chain.compare(await chain.settle()), { missing: [], extra: [], twice: 0 }, 'what it held unacknowledged came again')
  })

  await t.test('PostgreSQL restarted during a burst', async t => {
    const acked = await chain.burst(PER_MEMBER, async () => {
      await chain.pg.stop()
      await delay(500)
      await chain.pg.start()
    })
    t.equal(acked, PER_MEMBER * 4)
    t.same(chain.compare(await chain.settle()), { missing: [], extra: [], twice: 0 })
    const health = await (await fetch(`${hubB.url}/health`)).json() as { postgres: string }
    t.equal(health.postgres, 'up', 'the instance writes again')
  })

  await t.test('the broker restarted during a burst (persistence on)', async t => {
    const from = [hubA.lines.length, hubB.lines.length]
    const acked = await chain.burst(PER_MEMBER, async () => {
      await chain.broker.stop()
      await delay(300)
      await chain.broker.start()
    })
    t.equal(acked, PER_MEMBER * 4)
    // Both instances subscribe again on their new connections (the restored session lost its shared subscriptions).
    await hubA.subscribedAgain(from[0]!)
    await hubB.subscribedAgain(from[1]!)
    t.same(chain.compare(await chain.settle()), { missing: [], extra: [], twice: 0 })
  })

  t.teardown(() => { if (process.env.HUB_TEST_DEBUG === '1') for (const h of chain.hubs) console.error(h.clientId, h.stderr, h.lines.filter(l => !l.includes('"level":30')).join('\n')) })
  const held = await chain.held()
  t.equal(held.length, chain.acknowledged.size, `${chain.acknowledged.size} readings, each once`)
})
