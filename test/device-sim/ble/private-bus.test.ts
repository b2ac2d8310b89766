import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import * as dbus from 'dbus-next'
import { startPrivateBus } from '../../../device-sim/ble/private-bus.ts'

t.test('prints a unix address any client can own names on; stop removes its files and is idempotent', async t => {
  const bus = await startPrivateBus()
  t.match(bus.address, /^unix:path=\/.+\/bus\.sock$/)
  const path = bus.address.slice('unix:path='.length)
  t.equal(existsSync(path), true)
  const client = dbus.sessionBus({ busAddress: bus.address })
  client.on('error', () => {})
  t.equal(await client.requestName('org.bluez', 0), dbus.RequestNameReply.PRIMARY_OWNER, 'system-bus-like policy allows owning org.bluez')
  client.disconnect()
  await bus.stop()
  await bus.stop()
  t.equal(existsSync(path), false)
})

t.test('in a given directory: leaves the directory, removes its own files', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-bus-test-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const bus = await startPrivateBus(dir)
  t.equal(bus.address, `unix:path=${join(dir, 'bus.sock')}`)
  t.same((await readdir(dir)).sort(), ['bus.conf', 'bus.sock'])
  await bus.stop()
  t.same(await readdir(dir), [])
})
