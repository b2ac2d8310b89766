// One real aedes broker (relay/broker/broker.ts) over a real LevelDB store for
// a whole conformance file, with the MQTT device source given to it from
// outside, so that the suite starts and stops that source with its own sink.
// Connections reach the broker through a listener of this file's own, which
// knows when the broker's end of each socket has closed.
import { EventEmitter } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { Store } from '../../api/store/db.ts'
import { Devices } from '../../api/store/devices.ts'
import { Tokens } from '../../api/store/tokens.ts'
import { appAuth } from '../../api/auth-port.ts'
import { MqttBroker } from '../../relay/broker/broker.ts'
import { MqttSource } from '../../relay/broker/mqtt-source.ts'

interface Tap { teardown (fn: () => unknown): void }

export interface MqttWorld {
  url: string
  source: MqttSource
  /** Pairs a device and returns its MQTT credentials. */
  device (deviceId: string): Promise<{ username: string, password: string }>
  /** Resolves once the broker's end of the connection from this local port has closed. */
  closed (clientPort: number): Promise<void>
  /** Resolves once the broker's end of every connection has closed. */
  allClosed (): Promise<void>
}

export async function startMqttWorld (t: Tap): Promise<MqttWorld> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-conformance-'))
  const store = await Store.open(dir)
  const devices = new Devices(store)
  await devices.load()
  const log = pino({ level: process.env.HR_RELAY_TEST_LOG ?? 'silent' })
  const source = new MqttSource(log)
  const broker = new MqttBroker({ host: '127.0.0.1', port: 0, maxPacketBytes: 8192, connectTimeoutMs: 10_000, keepaliveLimitS: 300 }, {
    devices,
    apps: appAuth(new Tokens(store)),
    // The broker's own sink is not used: the source was given from outside.
    ingest: { submit: async () => { throw new Error('not used: the suite owns the source') } },
    log,
    source
  })
  await broker.start()
  const live = new Set<Socket>()
  const changes = new EventEmitter()
  const server = createServer(socket => {
    live.add(socket)
    socket.once('close', () => { live.delete(socket); changes.emit('change') })
    broker.handle(socket)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  t.teardown(async () => {
    await new Promise<void>(resolve => { server.close(() => { resolve() }); for (const s of live) s.destroy() })
    await broker.stop()
    await store.close()
    await rm(dir, { recursive: true, force: true })
  })
  return {
    url: `mqtt://127.0.0.1:${address.port}`,
    source,
    device: async deviceId => {
      const added = await devices.add({ device_id: deviceId, profile_id: 'p1' })
      return { username: added.device.mqtt_username ?? '', password: added.mqtt_password ?? '' }
    },
    closed: async clientPort => {
      const open = (): boolean => [...live].some(s => s.remotePort === clientPort)
      while (open()) await new Promise(resolve => changes.once('change', resolve))
    },
    allClosed: async () => {
      while (live.size > 0) await new Promise(resolve => changes.once('change', resolve))
    }
  }
}
