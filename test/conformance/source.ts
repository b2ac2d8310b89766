// The conformance suite every input adapter runs (relay/sources/source.ts),
// in the manner of aedes-persistence/abstract.js and abstract-level's
// compliance tests: one exported function takes a harness (a factory for the
// source and its real peer, plus hooks that make the peer do things) and
// registers the same tap subtests for every adapter.
//
// An adapter test file (test/conformance/<adapter>.test.ts) builds one
// expensive fixture (a dbus-daemon, a broker, a service) and calls
// sourceSuite(t, harness). Each subtest makes a fresh rig from it.
import type { Test } from 'tap'
import type { IngestResult, Reading } from '../../api/pipeline/reading.ts'
import type { DeviceSighting, Source, SourceSink, SourceState, SourceStatus } from '../../relay/sources/source.ts'
import { reopenDelay, type BackoffOptions } from '../../relay/reopen-backoff.ts'

/** A sink that records everything and wakes waiters on every event. */
export class ConformanceSink implements SourceSink {
  readonly readings: Reading[] = []
  readonly statuses: SourceStatus[] = []
  readonly sightings: DeviceSighting[] = []
  readonly drops: string[] = []
  private waiters: Array<() => void> = []

  async reading (reading: Reading): Promise<IngestResult> {
    this.readings.push(reading)
    this.notify()
    return { status: 'stored', profile_id: 'p1' }
  }

  status (status: SourceStatus): void { this.statuses.push({ ...status }); this.notify() }
  device (sighting: DeviceSighting): void { this.sightings.push(sighting); this.notify() }
  dropped (reason: string): void { this.drops.push(reason); this.notify() }

  bpms (): number[] { return this.readings.map(r => r.heart_rate) }

  /** Resolves once `done()` holds, re-checked on every sink event and on `poke()`. The deadline only guards a hang. */
  async waitFor (what: string, done: () => boolean, ms = 30_000): Promise<void> {
    if (done()) return
    await new Promise<void>((resolve, reject) => {
      const check = (): void => { if (done()) { finish(); resolve() } }
      const timer = setTimeout(() => {
        finish()
        reject(new Error(`timed out waiting for ${what}; readings ${JSON.stringify(this.bpms())}, drops ${JSON.stringify(this.drops)}, states ${JSON.stringify(this.statuses.map(s => s.state))}`))
      }, ms)
      const finish = (): void => { clearTimeout(timer); this.waiters = this.waiters.filter(w => w !== check) }
      this.waiters.push(check)
    })
  }

  /** Re-checks the waiters (a rig calls it when something outside the sink changed). */
  poke (): void { this.notify() }

  private notify (): void { for (const w of [...this.waiters]) w() }
}

/** One source and its peer (the device side), made fresh for each subtest. */
export interface SourceRig {
  source: Source
  /** The device id readings from this rig carry. */
  deviceId: string
  /** After start: brings the device up (MQTT: its client connects). Resolves once the source sees it. */
  connect (sink: ConformanceSink): Promise<void>
  /** The device sends one reading with this heart rate. */
  good (bpm: number): Promise<void>
  /** The device sends one frame the source must drop; resolves to the reason sink.dropped must get. */
  bad (sink: ConformanceSink): Promise<string>
  /** The device fails (unplugged, link dropped, connection lost); resolves once its end is closed. */
  fail (): Promise<void>
  /** The device is back (plugged in again, in range, reconnected); the source must take it up again. */
  restore (sink: ConformanceSink): Promise<void>
  /** Delays the source waited before reopening (from its debug log), when it reopens the device itself. */
  backoffDelays? (): number[]
}

export interface SourceHarness {
  name: string
  rig (t: Test): Promise<SourceRig>
  /** The states the source reports from start until the device is up, in order (repeats collapsed). */
  startStates: SourceState[]
  /** status().state while the device is gone (the source itself is still up). */
  lostState: SourceState
  /**
   * Who brings a failed device back: the source, reopening with backoff
   * (BLE, serial), or the device itself, reconnecting (MQTT: a device's
   * client reconnects; the broker has nothing to reopen), with the reason.
   */
  recovery: { by: 'source', backoff: BackoffOptions } | { by: 'device', why: string }
}

/** Active timers and handles by type (process.getActiveResourcesInfo). */
function resources (): Map<string, number> {
  const counts = new Map<string, number>()
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1)
  return counts
}

/** Lets closed handles leave the loop (close callbacks run in the next iterations). */
async function settle (): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise(resolve => setImmediate(resolve))
}

function distinct (states: SourceState[]): SourceState[] {
  return states.filter((s, i) => i === 0 || states[i - 1] !== s)
}

export function sourceSuite (t: Test, h: SourceHarness): void {
  t.test(`${h.name}: start reports its states, each reading reaches the sink once, stop is idempotent`, async t => {
    const rig = await h.rig(t)
    const sink = new ConformanceSink()
    t.equal(rig.source.status().state === 'running', false, 'not running before start')
    await rig.source.start(new AbortController().signal, sink)
    await rig.connect(sink)
    await sink.waitFor('running with the device up', () => rig.source.status().state === 'running' && (rig.source.status().connected ?? 0) >= 1)
    t.same(distinct(sink.statuses.map(s => s.state)), h.startStates, 'state transitions up to running')
    for (const bpm of [61, 62, 63]) await rig.good(bpm)
    await sink.waitFor('3 readings', () => sink.readings.length >= 3)
    await rig.good(64)
    await sink.waitFor('4 readings', () => sink.readings.length >= 4)
    t.same(sink.bpms(), [61, 62, 63, 64], 'each reading exactly once, in order')
    t.same(sink.readings.map(r => r.device_id), [rig.deviceId, rig.deviceId, rig.deviceId, rig.deviceId])
    t.same(sink.drops, [])

    await rig.source.stop()
    t.match(rig.source.status(), { state: 'stopped', connected: 0 })
    t.equal(sink.statuses.at(-1)?.state, 'stopped', 'stopped was reported')
    const reported = sink.statuses.length
    await rig.source.stop()
    t.equal(sink.statuses.length, reported, 'a second stop reports nothing')
    t.equal(rig.source.status().state, 'stopped')
  })

  t.test(`${h.name}: aborting the start signal stops the source; an aborted signal never starts it`, async t => {
    const rig = await h.rig(t)
    const sink = new ConformanceSink()
    const ac = new AbortController()
    await rig.source.start(ac.signal, sink)
    await rig.connect(sink)
    await sink.waitFor('running', () => rig.source.status().state === 'running')
    ac.abort()
    await sink.waitFor('stopped after abort', () => rig.source.status().state === 'stopped')
    await rig.source.stop()
    t.equal(sink.statuses.filter(s => s.state === 'stopped').length, 1, 'stopped reported once')
    t.match(rig.source.status(), { state: 'stopped', connected: 0 })

    const rig2 = await h.rig(t)
    const sink2 = new ConformanceSink()
    const aborted = new AbortController()
    aborted.abort()
    await rig2.source.start(aborted.signal, sink2)
    await sink2.waitFor('stopped', () => rig2.source.status().state === 'stopped')
    await rig2.source.stop()
    t.equal(sink2.statuses.some(s => s.state === 'running'), false, 'never ran')
    t.same(sink2.readings, [])
  })

  t.test(`${h.name}: no timers or handles are left behind after stop`, async t => {
    const rig = await h.rig(t)
    const sink = new ConformanceSink()
    await settle()
    const before = resources()
    await rig.source.start(new AbortController().signal, sink)
    await rig.connect(sink)
    await sink.waitFor('running', () => rig.source.status().state === 'running' && (rig.source.status().connected ?? 0) >= 1)
    await rig.good(70)
    await sink.waitFor('a reading', () => sink.readings.length >= 1)
    await rig.source.stop()
    await rig.fail()
    await settle()
    const after = resources()
    const grown = [...after].filter(([type, n]) => n > (before.get(type) ?? 0)).map(([type, n]) => `${type}: ${before.get(type) ?? 0} → ${n}`)
    t.same(grown, [], 'no more timers or handles of any type than before start')
    t.equal(after.get('Timeout') ?? 0, before.get('Timeout') ?? 0, 'timers: as many as before start')
  })

  t.test(`${h.name}: a failed device comes back and its readings flow again`, async t => {
    const rig = await h.rig(t)
    const sink = new ConformanceSink()
    await rig.source.start(new AbortController().signal, sink)
    await rig.connect(sink)
    await sink.waitFor('running', () => rig.source.status().state === 'running' && (rig.source.status().connected ?? 0) >= 1)
    await rig.good(71)
    await sink.waitFor('a reading', () => sink.readings.length >= 1)

    await rig.fail()
    await sink.waitFor('the device reported gone', () => rig.source.status().connected === 0 && rig.source.status().state === h.lostState)
    t.match(rig.source.status(), { state: h.lostState, connected: 0 }, 'health while the device is gone')
    const lostAt = sink.statuses.length

    await rig.restore(sink)
    await sink.waitFor('running with the device up again', () => rig.source.status().state === 'running' && (rig.source.status().connected ?? 0) >= 1)
    await rig.good(72)
    await sink.waitFor('a second reading', () => sink.readings.length >= 2)
    t.same(sink.bpms(), [71, 72], 'the reading after the failure arrives, nothing twice')
    t.ok(sink.statuses.slice(lostAt).some(s => s.state === 'running' && (s.connected ?? 0) >= 1), 'the way back up was reported to the sink')

    if (h.recovery.by === 'source') {
      const delays = rig.backoffDelays?.() ?? []
      t.ok(delays.length >= 1, `the source waited before reopening (${delays.length} delays)`)
      const backoff = h.recovery.backoff
      // Each delay lies in [ceiling/2, ceiling] of its attempt (reopen-backoff.ts): the ceilings double.
      const bounds = delays.map((_, i) => [reopenDelay(i, backoff, () => 0), reopenDelay(i, backoff, () => 1)] as const)
      t.same(delays.map((d, i) => d >= (bounds[i]?.[0] ?? 0) && d <= (bounds[i]?.[1] ?? 0)), delays.map(() => true), `delays ${JSON.stringify(delays)} within ${JSON.stringify(bounds)}`)
    } else {
      t.comment(`not reopened by the source: ${h.recovery.why}`)
    }
  })

  t.test(`${h.name}: bad frames are counted and never throw; the source keeps running`, async t => {
    const rig = await h.rig(t)
    const sink = new ConformanceSink()
    await rig.source.start(new AbortController().signal, sink)
    await rig.connect(sink)
    await sink.waitFor('running', () => rig.source.status().state === 'running' && (rig.source.status().connected ?? 0) >= 1)
    const first = await rig.bad(sink)
    const second = await rig.bad(sink)
    await sink.waitFor('2 drops', () => sink.drops.length >= 2)
    t.same(sink.drops, [first, second], 'each bad frame counted once, by reason')
    await rig.good(80)
    await sink.waitFor('a reading after the bad frames', () => sink.readings.length >= 1)
    t.same(sink.bpms(), [80], 'no reading came from a bad frame')
    t.same(sink.drops, [first, second])
    t.equal(rig.source.status().state, 'running')
  })
}

/**
 * The Ingest side, for an input that is not a lifecycle Source: the HTTP
 * write route (relay/sources/source.ts says why). It owns no device and no
 * listener of its own; what it must do is hand each reading to Ingest once,
 * acknowledge only after Ingest resolved with a stored (or acknowledged)
 * result, and answer a bad frame itself without reaching Ingest.
 */
export interface IngestRig {
  /** Sends one reading; resolves to true when the sender got an acknowledgment. */
  send (bpm: number): Promise<boolean>
  /** Sends one bad frame; rejects unless the sender got the input's refusal (e.g. HTTP 400 with the error body). */
  bad (): Promise<void>
}

export interface IngestHarness {
  name: string
  /** A rig whose input hands readings to `ingest` until the subtest ends. */
  rig (t: Test, ingest: { submit: (r: Reading) => Promise<IngestResult> }): Promise<IngestRig>
}

/** An Ingest that records, answers `result` and can hold each submit until released. */
class HoldingIngest {
  readonly sink = new ConformanceSink()
  result: IngestResult = { status: 'stored', profile_id: 'p1' }
  private gate: Promise<void> | undefined
  private release: (() => void) | undefined

  hold (): void { this.gate = new Promise(resolve => { this.release = resolve }) }
  open (): void { this.release?.(); this.gate = undefined }

  submit = async (r: Reading): Promise<IngestResult> => {
    await this.sink.reading(r)
    if (this.gate !== undefined) await this.gate
    return this.result
  }
}

export function ingestSuite (t: Test, h: IngestHarness): void {
  t.test(`${h.name}: each reading reaches ingest once and is acknowledged only after ingest resolved`, async t => {
    const ingest = new HoldingIngest()
    const rig = await h.rig(t, ingest)
    ingest.hold()
    let acknowledged: boolean | undefined
    const sent = rig.send(61).then(ok => { acknowledged = ok })
    await ingest.sink.waitFor('the reading at ingest', () => ingest.sink.readings.length === 1)
    t.equal(acknowledged, undefined, 'no answer while ingest holds the reading')
    ingest.open()
    await sent
    t.equal(acknowledged, true)
    t.equal(await rig.send(62), true)
    t.equal(await rig.send(63), true)
    t.same(ingest.sink.bpms(), [61, 62, 63], 'each reading exactly once, in order')
  })

  t.test(`${h.name}: a reading ingest refuses is not acknowledged`, async t => {
    const ingest = new HoldingIngest()
    const rig = await h.rig(t, ingest)
    ingest.result = { status: 'dropped', reason: 'out_of_range' }
    t.equal(await rig.send(64), false, 'refused: not acknowledged')
    ingest.result = { status: 'dropped', reason: 'duplicate' }
    t.equal(await rig.send(65), true, 'a duplicate is acknowledged (ACKNOWLEDGED_DROPS)')
    t.same(ingest.sink.bpms(), [64, 65])
  })

  t.test(`${h.name}: bad frames never reach ingest and never throw; the input keeps working`, async t => {
    const ingest = new HoldingIngest()
    const rig = await h.rig(t, ingest)
    await rig.bad()
    await rig.bad()
    t.same(ingest.sink.readings, [], 'nothing reached ingest')
    t.equal(await rig.send(80), true)
    t.same(ingest.sink.bpms(), [80])
  })
}
