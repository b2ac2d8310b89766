// The ANT source configuring a stick over a real pty pair (socat), the device end being device-sim's ANT stick:
// the exact messages the stick receives, in scan mode and, on a stick that refuses scan mode, with one heart-rate
// channel per strap slot; then the strap's readings, RR intervals included, and its sighting.
import t from 'tap'
import { openPtyPair } from '../../../device-sim/serial/pty.ts'
import { AntStickSim } from '../../../device-sim/ant/stick.ts'
import { AntSource } from '../../../relay/sources/ant.ts'
import { channelsSetup, encodeAntMessage, parseNetworkKey, scanModeSetup } from '../../../firmware-protocol/ant.ts'
import { ConformanceSink } from '../../conformance/source.ts'

const KEY = parseNetworkKey('b1c2d3e4f5a60718')
const hex = (frames: Uint8Array[]): string[] => frames.map(f => Buffer.from(f).toString('hex'))

for (const scanMode of [true, false]) {
  t.test(scanMode ? 'a stick with scan mode: the seven setup messages, then readings' : 'a stick without scan mode: the scan attempt, then eight heart-rate channels, then readings', async t => {
    const pair = await openPtyPair()
    t.teardown(() => pair.close())
    const stick = new AntStickSim({ path: pair.devicePath, scanMode })
    await stick.open()
    t.teardown(() => stick.close())
    stick.addStrap({ deviceNumber: 77_001, rssi: -61, batteryPercent: 64, firstBackgroundPage: 7 })
    const source = new AntSource({ path: pair.relayPath, networkKey: KEY, shouldSubmit: id => id === 'ant:77001' })
    t.teardown(() => source.stop())
    const sink = new ConformanceSink()
    await source.start(new AbortController().signal, sink)
    await sink.waitFor('the stick configured', () => source.status().state === 'running')
    const expected = scanMode ? scanModeSetup(KEY) : [...scanModeSetup(KEY), ...channelsSetup(KEY, 8)]
    t.same(hex(stick.received.map(m => encodeAntMessage(m.id, m.data))), hex(expected), `the stick received exactly ${expected.length} messages, in order`)
    t.same(source.status(), { state: 'running', detail: scanMode ? 'continuous scan mode' : '8 heart-rate channels', connected: 0 })

    // Beats at 1000 ms: 1024 ticks of the strap's clock, exactly 1000 ms.
    const feed = setInterval(() => { stick.beats(77_001, 60, [1000]) }, 1000)
    t.teardown(() => { clearInterval(feed) })
    stick.beats(77_001, 60, [1000])
    await sink.waitFor('two readings with RR', () => sink.readings.filter(r => r.rr_intervals_ms !== undefined).length >= 2)
    const withRr = sink.readings.filter(r => r.rr_intervals_ms !== undefined)
    t.same(withRr.slice(0, 2).map(r => ({ ...r, measured_at: 0 })), [0, 1].map(() => ({ device_id: 'ant:77001', source: 'ant', measured_at: 0, heart_rate: 60, rr_intervals_ms: [1000], battery_percent: 64 })))
    t.match(sink.sightings[0], { device_id: 'ant:77001', source: 'ant', name: 'ANT+ strap 77001', rssi: -61, connected: true })
    t.equal(source.status().connected, 1)
  })
}

t.test('readings of a strap the composition root does not want (unpaired) never reach the sink; its sightings do', async t => {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const stick = new AntStickSim({ path: pair.devicePath })
  await stick.open()
  t.teardown(() => stick.close())
  stick.addStrap({ deviceNumber: 5, rssi: -70 })
  stick.addStrap({ deviceNumber: 6, rssi: -50 })
  const source = new AntSource({ path: pair.relayPath, networkKey: KEY, shouldSubmit: id => id === 'ant:6' })
  t.teardown(() => source.stop())
  const sink = new ConformanceSink()
  await source.start(new AbortController().signal, sink)
  const feed = setInterval(() => { stick.beats(5, 90, [666]); stick.beats(6, 91, [659]) }, 1000)
  t.teardown(() => { clearInterval(feed) })
  await sink.waitFor('three readings of strap 6 and strap 5 sighted', () => sink.readings.length >= 3 && sink.sightings.some(s => s.device_id === 'ant:5'))
  t.same([...new Set(sink.readings.map(r => r.device_id))], ['ant:6'], 'only strap 6\'s readings')
  t.match(sink.sightings.find(s => s.device_id === 'ant:5'), { source: 'ant', rssi: -70, connected: true })
})
