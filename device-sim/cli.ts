// `hr-relay sim <ble|serial|mqtt|http|ant>`: simulated straps and devices for
// hardware testers, app developers and benchmarks. See docs/operator.md "The simulator, for hardware testers".
import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { AdminClient, type DeviceCredentials } from './admin-client.ts'
import { SimError } from './errors.ts'
import { FAULT_FLAGS, parseFaultFlag } from './faults.ts'
import { runLoad } from './load.ts'
import { pairDevices, provisionWriters, readCredentialsFile, readTokensFile, simDevices } from './provision.ts'
import { loadRecording } from './replay.ts'
import { Simulation } from './runner.ts'
import { loadScenario, BUNDLED_SCENARIOS, type FaultSpec } from './scenario.ts'
import { AntTransport, MAX_SIM_ANT_STRAPS } from './transports/ant.ts'
import { BleTransport, type BleTransportOptions } from './transports/ble.ts'
import { HttpTransport } from './transports/http.ts'
import { MqttTransport } from './transports/mqtt.ts'
import { parseSerialFormat, SerialTransport } from './transports/serial.ts'
import { TRANSPORTS, type SimTransport, type TransportName } from './transports/transport.ts'
import { attachView } from './view.ts'

export const SIM_USAGE = `usage: hr-relay sim <ble|serial|mqtt|http|ant> [options]

  --count N            simulated devices (default 3); --straps N is the same
  --rate HZ            readings per second per device (default 1)
  --duration S         stop after S seconds (default: until Ctrl-C)
  --seed N             physiology and addresses are reproducible from the seed (default 1)
  --scenario NAME|FILE ${BUNDLED_SCENARIOS.join(', ')} or a scenario file (default spinning-class)
  --replay FILE        replay a recorded session (CSV measured_at,heart_rate[,rr...] or JSON lines) exactly
  --rebase             with --replay: shift the recording to start now
  --prefix P           user and device name prefix (default sim)
  --data-dir DIR       a running hr-relay's data directory: create users <prefix>-N, pair the devices,
                       issue tokens (through the admin API)

 ble:    --bus ADDRESS   use this D-Bus instead of starting a private dbus-daemon
         --adapters N    emulated adapters hci0 .. hci(N-1), each hearing every strap (default 1)
         --max-connections N  an adapter refuses a connection beyond N (BlueZ's Failed "le-connection-abort-by-local")
         --silent-above N     an adapter's connections beyond N connect but deliver nothing
 serial: --format F      framed (default), text[:plain|keyed|csv|pulsesensor], hrmi
 mqtt:   --url URL       broker (default: the --data-dir server's MQTT port, else mqtt://127.0.0.1:1883)
         --credentials FILE  [{"device_id","mqtt_username","mqtt_password"}, ...]
         --qos 0|1       (default 1)
         --stats-json    load generator: publish for --duration s (default 60), then print exact counts as JSON
 http:   --url URL       the relay's HTTP base URL (default: from --data-dir)
         --tokens FILE   [{"username","token"}, ...] with scope data:heart_rate:write
 ant:    one ANT USB stick on a pty (put its printed path in the relay's ant: [{path, network_key}]) hearing
         --straps N ANT+ straps; --drop is a strap out of range, --unplug pulls the stick out
         --no-scan-mode  a stick without continuous scan mode (the relay opens a channel per strap)

 faults (every flag takes EVERY seconds; /DURATION or /COUNT after it; @AT for the first time):
  --drop 30/5          the link drops for 5 s every 30 s, then returns
  --unplug 60/5        the device disappears (pty gone, strap removed, socket cut) for 5 s
  --contact-lost 20/3  0 bpm without skin contact for 3 s
  --garbage 10         a line / payload / notification that is not a reading
  --bad-checksum 10    a framed line with a wrong checksum (serial)
  --oversized 15       a line / payload longer than any limit
  --skew 5000          device timestamps off by 5000 ms (MQTT, HTTP); --skew -3000@30/10 from 30 s for 10 s
  --burst 30/20        20 readings back to back every 30 s
  --fault-devices 0,2  apply the fault flags to these device indexes only (default all)
`

const OPTIONS = {
  count: { type: 'string' }, rate: { type: 'string' }, duration: { type: 'string' }, seed: { type: 'string' },
  scenario: { type: 'string' }, replay: { type: 'string' }, rebase: { type: 'boolean' }, prefix: { type: 'string' },
  'data-dir': { type: 'string' }, bus: { type: 'string' }, format: { type: 'string' }, url: { type: 'string' },
  credentials: { type: 'string' }, tokens: { type: 'string' }, qos: { type: 'string' }, 'stats-json': { type: 'boolean' },
  'fault-devices': { type: 'string' }, help: { type: 'boolean' }, straps: { type: 'string' }, 'no-scan-mode': { type: 'boolean' },
  adapters: { type: 'string' }, 'max-connections': { type: 'string' }, 'silent-above': { type: 'string' },
  ...Object.fromEntries(FAULT_FLAGS.map(f => [f.flag, { type: 'string' as const }]))
} as const

type Values = Record<string, string | boolean | undefined>

function num (v: Values, name: string, def: number, check: (n: number) => boolean): number {
  const raw = v[name]
  if (raw === undefined) return def
  const n = Number(raw)
  if (typeof raw !== 'string' || !Number.isFinite(n) || !check(n)) throw new SimError('bad_option', `--${name} ${String(raw)}`)
  return n
}

async function serverInfo (dataDir: string): Promise<{ url: string, mqtt_port: number | null }> {
  try {
    return JSON.parse(await readFile(join(resolve(dataDir), 'server.json'), 'utf8'))
  } catch (err) {
    throw new SimError('bad_option', `no running hr-relay for --data-dir ${dataDir}`, { cause: err })
  }
}

async function mqttUrl (v: Values): Promise<string> {
  if (typeof v.url === 'string') return v.url
  if (typeof v['data-dir'] === 'string') {
    const info = await serverInfo(v['data-dir'])
    if (info.mqtt_port !== null && info.mqtt_port !== undefined) return `mqtt://127.0.0.1:${info.mqtt_port}`
  }
  return 'mqtt://127.0.0.1:1883'
}

function faultSpecs (v: Values): FaultSpec[] {
  let devices: number[] | undefined
  if (typeof v['fault-devices'] === 'string') {
    devices = v['fault-devices'].split(',').map(x => Number(x.trim()))
    if (!devices.every(d => Number.isInteger(d) && d >= 0)) throw new SimError('bad_option', `--fault-devices ${v['fault-devices']}`)
  }
  return FAULT_FLAGS.flatMap(f => typeof v[f.flag] === 'string' ? [parseFaultFlag(f.kind, v[f.flag] as string, devices)] : [])
}

/** --bus, --adapters, --max-connections, --silent-above. */
function bleOptions (v: Values): BleTransportOptions {
  const adapters = num(v, 'adapters', 1, n => Number.isInteger(n) && n >= 1 && n <= 16)
  const limit = (name: string): number | undefined => v[name] === undefined ? undefined : num(v, name, 0, n => Number.isInteger(n) && n >= 0 && n <= 1000)
  const maxConnections = limit('max-connections')
  const silentAbove = limit('silent-above')
  return {
    ...(typeof v.bus === 'string' ? { busAddress: v.bus } : {}),
    adapters,
    limits: { ...(maxConnections === undefined ? {} : { maxConnections }), ...(silentAbove === undefined ? {} : { silentAbove }) }
  }
}

async function buildTransport (name: TransportName, v: Values, count: number, seed: number, prefix: string, out: (line: string) => void): Promise<{ transport: SimTransport, ids?: string[] }> {
  const dataDir = typeof v['data-dir'] === 'string' ? v['data-dir'] : undefined
  switch (name) {
    case 'ble': return { transport: new BleTransport(bleOptions(v)) }
    case 'ant': return { transport: new AntTransport(v['no-scan-mode'] === true ? { scanMode: false } : {}) }
    case 'serial': return { transport: new SerialTransport(parseSerialFormat(typeof v.format === 'string' ? v.format : 'framed')) }
    case 'mqtt': {
      let credentials: DeviceCredentials[]
      if (typeof v.credentials === 'string') credentials = await readCredentialsFile(v.credentials)
      else if (dataDir !== undefined) {
        out(`creating ${count} users and MQTT devices through the admin API ...`)
        credentials = await pairDevices(await AdminClient.forDataDir(dataDir), simDevices('mqtt', prefix, seed, count), prefix)
      } else throw new SimError('bad_option', 'mqtt needs --credentials FILE or --data-dir DIR')
      if (credentials.length < count) throw new SimError('bad_option', `--count ${count} but only ${credentials.length} credentials`)
      return { transport: new MqttTransport({ url: await mqttUrl(v), credentials, qos: v.qos === '0' ? 0 : 1 }), ids: credentials.map(c => c.device_id) }
    }
    case 'http': {
      let writers
      if (typeof v.tokens === 'string') writers = await readTokensFile(v.tokens)
      else if (dataDir !== undefined) writers = await provisionWriters(await AdminClient.forDataDir(dataDir), count, prefix)
      else throw new SimError('bad_option', 'http needs --tokens FILE or --data-dir DIR')
      if (writers.length < count) throw new SimError('bad_option', `--count ${count} but only ${writers.length} tokens`)
      const url = typeof v.url === 'string' ? v.url : dataDir !== undefined ? (await serverInfo(dataDir)).url : 'http://127.0.0.1:8080'
      return { transport: new HttpTransport({ url, writers }), ids: writers.map(w => w.username) }
    }
  }
}

async function runLoadCommand (v: Values, count: number, seed: number, prefix: string, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  let credentials: DeviceCredentials[]
  if (typeof v.credentials === 'string') credentials = await readCredentialsFile(v.credentials)
  else if (typeof v['data-dir'] === 'string') {
    err.write(`creating ${count} users and MQTT devices through the admin API ...\n`)
    credentials = await pairDevices(await AdminClient.forDataDir(v['data-dir']), simDevices('mqtt', prefix, seed, count), prefix)
  } else throw new SimError('bad_option', 'mqtt --stats-json needs --credentials FILE or --data-dir DIR')
  const ac = new AbortController()
  const onSig = (): void => { ac.abort() }
  process.once('SIGINT', onSig)
  try {
    const stats = await runLoad({
      url: await mqttUrl(v),
      credentials: credentials.slice(0, count),
      rateHz: num(v, 'rate', 1, n => n > 0 && n <= 100),
      durationS: num(v, 'duration', 60, n => n > 0),
      qos: v.qos === '0' ? 0 : 1,
      seed,
      signal: ac.signal,
      onProgress: s => { err.write(`sent ${s.sent} acked ${s.acked} in flight ${s.in_flight} connected ${s.connected}/${s.devices}\n`) }
    })
    out.write(JSON.stringify(stats) + '\n')
    return stats.connect_failed === 0 && stats.failed === 0 && stats.in_flight === 0 ? 0 : 1
  } finally {
    process.off('SIGINT', onSig)
  }
}

export async function runSim (argv: string[], io: { out?: NodeJS.WritableStream & { isTTY?: boolean }, err?: NodeJS.WritableStream, signal?: AbortSignal } = {}): Promise<number> {
  const out = io.out ?? process.stdout
  const err = io.err ?? process.stderr
  let parsed
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS })
  } catch (e) {
    err.write(`hr-relay sim: ${(e as Error).message}\n${SIM_USAGE}`)
    return 2
  }
  const v = parsed.values as Values
  const name = parsed.positionals[0]
  if (v.help === true || name === undefined) { out.write(SIM_USAGE); return name === undefined && v.help !== true ? 2 : 0 }
  if (!(TRANSPORTS as readonly string[]).includes(name) || parsed.positionals.length > 1) {
    err.write(`hr-relay sim: unknown transport ${parsed.positionals.join(' ')}\n${SIM_USAGE}`)
    return 2
  }
  const transportName = name as TransportName
  let transport: SimTransport | undefined
  try {
    if (v.straps !== undefined && v.count !== undefined) throw new SimError('bad_option', '--straps and --count are the same option; give one')
    const count = num(v, v.straps !== undefined ? 'straps' : 'count', 3, n => Number.isInteger(n) && n >= 1 && n <= (transportName === 'ant' ? MAX_SIM_ANT_STRAPS : 100_000))
    const seed = num(v, 'seed', 1, n => Number.isInteger(n) && n >= 0 && n <= 0xffffffff)
    const prefix = typeof v.prefix === 'string' ? v.prefix : 'sim'
    if (transportName === 'mqtt' && v['stats-json'] === true) return await runLoadCommand(v, count, seed, prefix, out, err)
    const rateHz = num(v, 'rate', 1, n => n > 0 && n <= 100)
    const durationS = v.duration === undefined ? undefined : num(v, 'duration', 0, n => n > 0)
    const scenario = await loadScenario(typeof v.scenario === 'string' ? v.scenario : 'spinning-class')
    const replay = typeof v.replay === 'string' ? await loadRecording(v.replay) : undefined
    const faults = [...(scenario.faults ?? []), ...faultSpecs(v)]
    const log = (line: string): void => { out.write(line + '\n') }
    const built = await buildTransport(transportName, v, count, seed, prefix, log)
    transport = built.transport
    const devices = simDevices(transportName, prefix, seed, count, built.ids)
    await transport.open(devices)
    if ((transportName === 'ble' || transportName === 'serial' || transportName === 'ant') && typeof v['data-dir'] === 'string') {
      await pairDevices(await AdminClient.forDataDir(v['data-dir']), devices, prefix, transportName)
      log(`paired ${count} devices with users ${prefix}-1..${prefix}-${count}`)
    }
    for (const line of transport.describe()) log(line)

    const ac = new AbortController()
    const onSig = (): void => { ac.abort() }
    process.once('SIGINT', onSig)
    process.once('SIGTERM', onSig)
    io.signal?.addEventListener('abort', onSig, { once: true })
    const sim = new Simulation({ transport, devices, rateHz, ...(durationS === undefined ? {} : { durationS }), seed, scenario, ...(replay === undefined ? {} : { replay }), rebase: v.rebase === true, faults, signal: ac.signal })
    const view = attachView(sim, out, `hr-relay sim ${transportName}: ${count} device(s), ${replay === undefined ? scenario.name : 'replay ' + String(v.replay)}, seed ${seed}`)
    try {
      await sim.run()
    } finally {
      view.stop()
      process.off('SIGINT', onSig)
      process.off('SIGTERM', onSig)
    }
    return 0
  } catch (e) {
    if (e instanceof SimError) {
      err.write(`hr-relay sim: ${e.message}\n`)
      return e.code === 'bad_option' ? 2 : 1
    }
    throw e
  } finally {
    await transport?.close()
  }
}
