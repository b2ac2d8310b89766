// relay/broker/quiet-debug.ts: with DEBUG unset, the debug functions of
// mqtt-packet (parsing and writing every MQTT packet) are silent no-ops; with
// DEBUG set, debug is left as it is and its trace still prints.
import t from 'tap'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { quietDebug } from '../../../relay/broker/quiet-debug.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const requireFromPacket = createRequire(createRequire(import.meta.url).resolve('mqtt-packet'))

type Debug = ((...args: unknown[]) => void) & { enabled: boolean, namespace: string, extend: (s: string) => Debug }

t.test('DEBUG unset: debug as mqtt-packet loads it hands out silent functions', async t => {
  t.equal(process.env.DEBUG ?? '', '', 'the test runs with DEBUG unset')
  const createDebug = requireFromPacket('debug') as ((ns: string) => Debug) & { quiet?: boolean }
  t.equal(createDebug.quiet, true, 'the broker module installed it on import')
  const d = createDebug('mqtt-packet:parser')
  t.equal(d.name, 'silent')
  t.notOk(d.enabled, 'disabled')
  t.equal(d.namespace, 'mqtt-packet:parser', 'the rest is the real instance\'s')
  t.equal(d('parse: %s', 'x'), undefined)
  t.equal(quietDebug({}), false, 'installed once')
  t.equal(quietDebug({ DEBUG: 'mqtt-packet:*' }), false, 'never with DEBUG set')
})

/** Runs a short script in a fresh node with the repository's TypeScript loader; its stderr. */
async function stderrOf (script: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, ['--import=./scripts/ts-loader.mjs', '--input-type=module', '-e', script], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  const code = await new Promise<number | null>(resolve => child.on('close', resolve))
  return { code, stderr }
}

// Loads the broker module (which installs quiet-debug), then parses a PINGREQ with mqtt-packet.
const PARSE = `
import './relay/broker/broker.ts'
import { createRequire } from 'node:module'
const mp = createRequire(import.meta.url)('mqtt-packet')
const parser = mp.parser()
let packets = 0
parser.on('packet', () => { packets++ })
parser.parse(Buffer.from([0xc0, 0x00]))
if (packets !== 1) process.exit(3)
`

t.test('DEBUG set: mqtt-packet\'s trace still prints', async t => {
  const env = { ...process.env, DEBUG: 'mqtt-packet:parser', DEBUG_COLORS: 'no' }
  const { code, stderr } = await stderrOf(PARSE, env)
  t.equal(code, 0)
  t.match(stderr, /^\S+Z mqtt-packet:parser _resetState: /m)
})

t.test('DEBUG unset: nothing prints, and the packet is parsed', async t => {
  const env = { ...process.env }
  delete env.DEBUG
  const { code, stderr } = await stderrOf(PARSE, env)
  t.equal(code, 0)
  t.equal(stderr, '')
})

// The real debug functions follow debug.enable() made later; silent ones do not. So this shows that the
// functions mqtt-packet made when the broker module loaded it are the silent ones.
t.test('DEBUG unset: the functions mqtt-packet holds are the silent ones', async t => {
  const env = { ...process.env }
  delete env.DEBUG
  const enableThenParse = PARSE.replace('const parser = mp.parser()', "createRequire(import.meta.url)('debug').enable('mqtt-packet:*')\nconst parser = mp.parser()")
  t.not(enableThenParse, PARSE)
  const { code, stderr } = await stderrOf(enableThenParse, env)
  t.equal(code, 0)
  t.equal(stderr, '', 'enabling the namespace afterwards does not reach them')
  // Without the broker module (nothing made them silent), the same enable makes mqtt-packet print.
  const { code: plainCode, stderr: plainStderr } = await stderrOf(enableThenParse.replace("import './relay/broker/broker.ts'", ''), env)
  t.equal(plainCode, 0)
  t.match(plainStderr, /mqtt-packet:parser _resetState: /)
})
