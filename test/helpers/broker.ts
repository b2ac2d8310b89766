// Starts the real embedded broker (aedes on a loopback TCP port) over a real
// LevelDB store, with a recording Ingest (our own interface; it can hold a
// reading back until the test releases it) and a reading feed the test drives.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { Store } from '../../api/store/db.ts'
import { Devices } from '../../api/store/devices.ts'
import { Tokens } from '../../api/store/tokens.ts'
import { appAuth } from '../../api/auth-port.ts'
import type { Ingest, IngestResult, Reading, StoredReading } from '../../api/pipeline/reading.ts'
import { MqttBroker, type BrokerConfig, type ReadingFeed } from '../../relay/broker/broker.ts'
import { Metrics } from '../../relay/metrics.ts'

interface Tap { teardown (fn: () => unknown): void }

export class RecordingIngest implements Ingest {
  readonly readings: Reading[] = []
  readonly events: string[] = []
  private gate: Promise<void> | null = null
  private release: (() => void) | null = null
  private waiters: Array<{ n: number, resolve: () => void }> = []
  fail = false

  constructor (private readonly devices: Devices) {}

  /** The next submits wait until `open()` is called. */
  hold (): void {
    this.gate = new Promise(resolve => { this.release = resolve })
  }

  open (): void {
    this.events.push('released')
    this.release?.()
    this.gate = null
  }

  /** Resolves once `n` readings have been submitted. */
  async submitted (n: number): Promise<void> {
    if (this.readings.length >= n) return
    await new Promise<void>(resolve => { this.waiters.push({ n, resolve }) })
  }

  async submit (reading: Reading): Promise<IngestResult> {
    this.readings.push(reading)
    this.events.push(`submit:${reading.heart_rate}`)
    for (const w of this.waiters.filter(w => this.readings.length >= w.n)) w.resolve()
    this.waiters = this.waiters.filter(w => this.readings.length < w.n)
    if (this.gate !== null) await this.gate
    if (this.fail) throw new Error('disk full')
    const owner = reading.device_id === undefined ? undefined : this.devices.ownerOf(reading.device_id, reading.source)
    this.events.push(`stored:${reading.heart_rate}`)
    return owner === undefined ? { status: 'dropped', reason: 'unpaired' } : { status: 'stored', profile_id: owner }
  }
}

export class TestFeed implements ReadingFeed {
  private readonly fns = new Set<(r: StoredReading) => void>()
  subscribeAll (fn: (r: StoredReading) => void): () => void {
    this.fns.add(fn)
    return () => { this.fns.delete(fn) }
  }

  emit (r: StoredReading): void { for (const fn of this.fns) fn(r) }
}

export interface BrokerHarness {
  broker: MqttBroker
  devices: Devices
  tokens: Tokens
  ingest: RecordingIngest
  feed: TestFeed
  metrics: Metrics
  url: string
  /** Pairs a device and returns its MQTT credentials. */
  device (deviceId: string, profileId: string): Promise<{ username: string, password: string }>
  /** A user access token with the given scopes. */
  token (profileId: string | null, scopes?: string[], expiresIn?: number): Promise<string>
  /** Connects an mqtt.js client (MQTT 3.1.1, no reconnect); resolves on CONNACK 0. */
  connect (options: IClientOptions): Promise<MqttClient>
}

export async function startBroker (t: Tap, config: Partial<BrokerConfig> = {}, extra: { revalidateMs?: number } = {}): Promise<BrokerHarness> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-broker-'))
  const store = await Store.open(dir)
  const devices = new Devices(store)
  await devices.load()
  const tokens = new Tokens(store)
  const ingest = new RecordingIngest(devices)
  const feed = new TestFeed()
  const metrics = new Metrics()
  const broker = new MqttBroker({ host: '127.0.0.1', port: 0, maxPacketBytes: 8192, connectTimeoutMs: 10_000, keepaliveLimitS: 300, ...config }, {
    devices, apps: appAuth(tokens), ingest, metrics, readings: feed, ...extra, log: pino({ level: process.env.HR_RELAY_TEST_LOG ?? 'silent' })
  })
  await broker.start()
  const clients: MqttClient[] = []
  t.teardown(async () => {
    for (const c of clients) c.end(true)
    await broker.stop()
    await store.close()
    await rm(dir, { recursive: true, force: true })
  })
  const url = `mqtt://127.0.0.1:${broker.port ?? 0}`
  return {
    broker,
    devices,
    tokens,
    ingest,
    feed,
    metrics,
    url,
    device: async (deviceId, profileId) => {
      const added = await devices.add({ device_id: deviceId, profile_id: profileId })
      return { username: added.device.mqtt_username ?? '', password: added.mqtt_password ?? '' }
    },
    token: async (profileId, scopes = ['data:heart_rate:read'], expiresIn = 3600) =>
      (await tokens.issue({ client_id: 'test', profile_id: profileId, scopes, flow: 'manual', expires_in: expiresIn })).access_token,
    connect: async options => {
      const client = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 10_000, ...options })
      clients.push(client)
      await new Promise<void>((resolve, reject) => {
        client.once('connect', () => { resolve() })
        client.once('error', reject)
        client.once('close', () => { reject(new Error('closed before CONNACK')) })
      })
      return client
    }
  }
}

/** Connects and returns the CONNACK return code (0 = accepted). */
export async function connackCode (url: string, options: IClientOptions): Promise<number> {
  const client = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, ...options })
  try {
    return await new Promise<number>((resolve, reject) => {
      client.on('packetreceive', packet => { if (packet.cmd === 'connack') resolve(packet.returnCode ?? -1) })
      client.once('close', () => { reject(new Error('closed without CONNACK')) })
    })
  } finally {
    client.end(true)
  }
}

/** Resolves when the client's connection closes. */
export async function closed (client: MqttClient): Promise<void> {
  if (!client.connected && client.disconnected) return
  await new Promise<void>(resolve => { client.once('close', () => { resolve() }) })
}

/** Subscribes and returns the granted codes of the SUBACK (0x80 = refused). */
export async function subackCodes (client: MqttClient, topic: string | string[], qos: 0 | 1 = 1): Promise<number[]> {
  return await new Promise<number[]>(resolve => {
    const onPacket = (packet: { cmd: string, granted?: Array<number | object> }): void => {
      if (packet.cmd !== 'suback') return
      client.off('packetreceive', onPacket)
      resolve((packet.granted ?? []).map(g => typeof g === 'number' ? g : -1))
    }
    client.on('packetreceive', onPacket)
    client.subscribe(topic, { qos }, () => { /* codes come from the raw SUBACK */ })
  })
}

/** A payload a device would publish. */
export function payload (heartRate: number, measuredAt = 1_700_000_000_000): string {
  return JSON.stringify({ measured_at: measuredAt, heart_rate: heartRate })
}
