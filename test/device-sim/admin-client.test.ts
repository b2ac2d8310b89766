// The simulator's admin client knows the admin API by its own table of the
// requests it makes (device-sim/admin-client.ts ADMIN_CALLS); the service's
// CLI has its own (relay/cli-*.ts). For the same command words, arguments and
// flags both send the same method, path and JSON body, so the simulator
// follows the admin API without importing the product.
import t from 'tap'
import { ADMIN_CALLS } from '../../device-sim/admin-client.ts'
import { ROOM_COMMANDS } from '../../relay/cli-rooms.ts'
import { DEVICE_COMMANDS } from '../../relay/cli-devices.ts'
import { INTEGRATION_COMMANDS } from '../../relay/cli-integrations.ts'

const cases: Array<{ words: string, args: string[], flags: Record<string, string | boolean> }> = [
  { words: 'device add', args: ['demo-strap-1'], flags: { user: 'demo-ada', kind: 'mqtt', json: true } },
  { words: 'device add', args: ['C7:E8:5E:ED:00:00'], flags: { user: 'demo-bo', kind: 'ble', json: true } },
  { words: 'device remove', args: ['demo strap/1'], flags: { json: true } },
  { words: 'room add', args: ['Spinning class'], flags: {} },
  { words: 'room member add', args: ['room/1', 'demo-ada'], flags: { 'display-name': 'Ada' } },
  { words: 'user set', args: ['demo-ada'], flags: { 'home-assistant': 'on' } },
  { words: 'user set', args: ['demo-bo'], flags: { 'home-assistant': 'off' } }
]

t.test('every call the simulator makes is the request hr-relay admin sends', async t => {
  t.same(Object.keys(ADMIN_CALLS).sort(), [...new Set(cases.map(c => c.words))].sort(), 'each call is covered below')
  for (const c of cases) {
    const cli = [...ROOM_COMMANDS, ...DEVICE_COMMANDS, ...INTEGRATION_COMMANDS].find(x => x.words.join(' ') === c.words)
    t.ok(cli, `the CLI has ${c.words}`)
    const sim = ADMIN_CALLS[c.words]!(c.args, c.flags)
    const want = cli!.request(c.args, c.flags)
    // On the wire: the JSON text of the body (undefined fields are not sent).
    t.same({ method: sim.method, path: sim.path, body: JSON.stringify(sim.body) }, { method: want.method, path: want.path, body: JSON.stringify(want.body) }, c.words)
  }
})
