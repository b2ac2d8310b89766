// The source conformance suite with the simulator (device-sim) as the peer:
// its serial transport (pty pairs, $ID and $HR lines, unplug and plug) drives
// a SerialSource, and its MQTT transport (one mqtt.js connection per device,
// reconnecting by itself) drives the MQTT device source on one real
// aedes broker. So the simulator's transports meet the same contract as the
// devices they stand for.
import t from 'tap'
import { SerialTransport } from '../../device-sim/transports/serial.ts'
import { MqttTransport } from '../../device-sim/transports/mqtt.ts'
import type { SimReading } from '../../device-sim/transports/transport.ts'
import { SerialSource } from '../../relay/sources/serial.ts'
import { sourceSuite } from './source.ts'
import { recordingLogger } from './log-lines.ts'
import { startMqttWorld } from './mqtt-world.ts'

const backoff = { initialMs: 40, maxMs: 320 }
const reading = (bpm: number): SimReading => ({ measured_at: Date.now(), heart_rate: bpm, rr_intervals_ms: [], sensor_contact: true })
let next = 1

sourceSuite(t, {
  name: 'sim serial transport',
  startStates: ['starting', 'running'],
  lostState: 'degraded',
  recovery: { by: 'source', backoff },
  async rig (t) {
    const deviceId = `sim-serial-${next++}`
    const transport = new SerialTransport({ format: 'framed' })
    await transport.open([{ index: 0, device_id: deviceId, label: 'A' }])
    t.teardown(() => transport.close())
    const path = transport.relayPath(0)
    if (path === undefined) throw new Error('no relay path')
    const { logger, lines } = recordingLogger()
    // No configured device id: the source learns it from the simulator's $ID line.
    const source = new SerialSource({ path, format: 'framed', reopen: backoff, presenceCheckMs: 100, logger })
    t.teardown(() => source.stop())
    return {
      source,
      deviceId,
      async connect () {},
      async good (bpm) { if (!await transport.send(0, reading(bpm))) throw new Error('not sent') },
      async bad () {
        if (await transport.inject(0, 'bad_checksum', reading(70)) !== 'injected') throw new Error('not injected')
        return 'serial_bad_checksum'
      },
      async fail () { await transport.link(0, false, 'unplug') },
      async restore () { await transport.link(0, true, 'unplug') },
      backoffDelays: () => lines.filter(l => l.msg === 'reopen scheduled').map(l => l.delay as number)
    }
  }
})

const world = await startMqttWorld(t)

sourceSuite(t, {
  name: 'sim mqtt transport',
  startStates: ['running'],
  lostState: 'running',
  recovery: { by: 'device', why: 'the simulated device reconnects itself (mqtt.js reconnect period); the broker has no device to reopen' },
  async rig (t) {
    const deviceId = `sim-mqtt-${next++}`
    const cred = await world.device(deviceId)
    const source = world.source
    // QoS 1, as the simulator runs by default: an injected fault goes out at
    // QoS 0 (a refused QoS 1 frame would be resent by mqtt.js after every
    // reconnect and counted again), so each bad frame is counted exactly once.
    const transport = new MqttTransport({ url: world.url, qos: 1, credentials: [{ device_id: deviceId, mqtt_username: cred.username, mqtt_password: cred.password }] })
    const devices = [{ index: 0, device_id: deviceId, label: 'A' }]
    t.teardown(async () => {
      await source.stop()
      await transport.close()
    })
    return {
      source,
      deviceId,
      async connect (sink) {
        await transport.open(devices)
        await sink.waitFor('the device connected', () => source.status().connected === 1)
      },
      async good (bpm) { if (!await transport.send(0, reading(bpm))) throw new Error('not sent') },
      async bad () {
        if (await transport.inject(0, 'garbage') !== 'injected') throw new Error('not injected')
        return 'mqtt_bad_json'
      },
      async fail () {
        await transport.link(0, false, 'unplug')
        await world.allClosed()
      },
      async restore (sink) {
        await transport.link(0, true, 'unplug')
        await sink.waitFor('the device connected again', () => source.status().connected === 1)
      }
    }
  }
})
