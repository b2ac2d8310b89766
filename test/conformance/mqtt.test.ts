// The source conformance suite for the MQTT device source (relay/broker/
// mqtt-source.ts) over one real aedes broker and real mqtt.js client sockets.
// There is no device for the source to reopen: a device's client reconnects
// by itself, so "a failed device comes back" is a new connection with the
// same credentials whose readings flow again. The one source of the broker is
// started and stopped again by every subtest.
import t from 'tap'
import mqtt, { type MqttClient } from 'mqtt'
import { deviceHeartRateTopic, encodeDevicePayload } from '../../firmware-protocol/mqtt.ts'
import { sourceSuite } from './source.ts'
import { startMqttWorld } from './mqtt-world.ts'

const world = await startMqttWorld(t)
let next = 1

sourceSuite(t, {
  name: 'mqtt',
  startStates: ['running'],
  lostState: 'running',
  recovery: { by: 'device', why: 'an MQTT device reconnects itself; the broker has no device to reopen' },
  async rig (t) {
    const deviceId = `strap-mqtt-${next++}`
    const cred = await world.device(deviceId)
    const source = world.source
    let client: MqttClient | undefined
    const open = async (): Promise<MqttClient> => {
      const c = mqtt.connect(world.url, { protocolVersion: 4, clientId: deviceId, username: cred.username, password: cred.password, reconnectPeriod: 0 })
      await new Promise<void>((resolve, reject) => { c.once('connect', () => { resolve() }); c.once('error', reject) })
      return c
    }
    const close = async (): Promise<void> => {
      const c = client
      client = undefined
      if (c === undefined) return
      const port = (c.stream as { localPort?: number }).localPort
      await c.endAsync(true)
      if (port !== undefined) await world.closed(port)
    }
    t.teardown(async () => {
      await source.stop()
      await close()
    })
    const publish = async (payload: string, qos: 0 | 1): Promise<void> => {
      if (client === undefined) throw new Error('not connected')
      await client.publishAsync(deviceHeartRateTopic(deviceId), payload, { qos })
    }
    return {
      source,
      deviceId,
      async connect (sink) {
        client = await open()
        await sink.waitFor('the device connected', () => source.status().connected === 1)
      },
      // QoS 1: resolves on PUBACK, which the broker sends only after the sink took the reading.
      async good (bpm) { await publish(encodeDevicePayload({ measured_at: Date.now(), heart_rate: bpm }), 1) },
      // QoS 0, so that the connection stays (a QoS 1 bad payload closes it without PUBACK).
      async bad () { await publish('{"measured_at": "soon"', 0); return 'mqtt_bad_json' },
      fail: close,
      async restore (sink) {
        client = await open()
        await sink.waitFor('the device connected again', () => source.status().connected === 1)
      }
    }
  }
})
