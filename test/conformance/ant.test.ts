// The source conformance suite for the ANT source on real pseudo-terminals (socat): the device end is
// device-sim's ANT stick with one ANT+ strap, the relay end an AntSource that configures the stick and follows the
// strap. A failed device is an unplugged stick (socat ends, the pty vanishes); the source reopens the same path
// with backoff and configures the stick again.
import t from 'tap'
import { openPtyPair } from '../../device-sim/serial/pty.ts'
import { AntStickSim } from '../../device-sim/ant/stick.ts'
import { AntSource } from '../../relay/sources/ant.ts'
import { parseNetworkKey } from '../../firmware-protocol/ant.ts'
import { sourceSuite, type ConformanceSink } from './source.ts'
import { recordingLogger } from './log-lines.ts'

const backoff = { initialMs: 40, maxMs: 320 }
const STRAP = 4242

sourceSuite(t, {
  name: 'ant',
  startStates: ['starting', 'running'],
  lostState: 'degraded',
  recovery: { by: 'source', backoff },
  async rig (t) {
    const pair = await openPtyPair()
    t.teardown(() => pair.close())
    const plugIn = async (): Promise<AntStickSim> => {
      const s = new AntStickSim({ path: pair.devicePath })
      await s.open()
      s.addStrap({ deviceNumber: STRAP, rssi: -55 })
      // A rate and no beat yet: the strap is heard, and its first page only sets the source's state.
      s.beats(STRAP, 60, [])
      return s
    }
    let stick = await plugIn()
    t.teardown(() => stick.close())
    const { logger, lines } = recordingLogger()
    const source = new AntSource({ path: pair.relayPath, networkKey: parseNetworkKey('0102030405060708'), reopen: backoff, presenceCheckMs: 100, answerTimeoutMs: 500, logger })
    t.teardown(() => source.stop())
    let sink: ConformanceSink | undefined
    return {
      source,
      deviceId: `ant:${STRAP}`,
      async connect (s) { sink = s },
      // One beat 300 ms on: the strap's count moves and the source makes one reading of it (at most one a second,
      // so each reading is awaited before the next beat).
      async good (bpm) {
        const before = sink?.readings.length ?? 0
        stick.beats(STRAP, bpm, [300])
        await sink?.waitFor(`the reading of ${bpm} bpm`, () => (sink?.readings.length ?? 0) > before)
      },
      // Noise on the line: one stretch of dropped bytes, counted once when the next page ends it.
      async bad (s) {
        const before = s.drops.length
        await stick.writeRaw(Uint8Array.of(0x00, 0x13, 0x37))
        await s.waitFor('the noise counted', () => s.drops.length > before)
        return 'ant_garbage'
      },
      async fail () {
        await pair.unplug()
        await stick.close()
      },
      async restore (s) {
        await pair.plug()
        stick = await plugIn()
        await s.waitFor('the stick configured again', () => source.status().state === 'running')
      },
      backoffDelays: () => lines.filter(l => l.msg === 'reopen scheduled').map(l => l.delay as number)
    }
  }
})
