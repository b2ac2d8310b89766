#!/usr/bin/env node
// `npm test`: install the system packages the tests drive (socat, mosquitto,
// chromium), run every test file under test/ with tap, and end with the one
// line CI reads: `N passed, M failed` (tap's own counts).
import { spawn, spawnSync } from 'node:child_process'

const needed = { socat: 'socat', mosquitto: 'mosquitto', chromium: 'chromium' }

function has (cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd} || test -x /usr/sbin/${cmd}`], { stdio: 'ignore' }).status === 0
}

const missing = Object.entries(needed).filter(([cmd]) => !has(cmd)).map(([, pkg]) => pkg)
if (missing.length > 0 && process.env.HR_RELAY_SKIP_APT !== '1') {
  if (process.getuid?.() !== 0) {
    console.error(`npm test: missing ${missing.join(', ')}; install them with: sudo apt-get install -y ${missing.join(' ')}`)
  } else {
    console.error(`npm test: installing ${missing.join(', ')} with apt-get`)
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
    spawnSync('apt-get', ['update'], { stdio: 'inherit', env })
    const r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { stdio: 'inherit', env })
    if (r.status !== 0) console.error('npm test: apt-get install failed; tests needing these tools will fail')
  }
}

const args = ['tap', ...process.argv.slice(2)]
// Tests run the TypeScript sources, never a dist/ left over from `npm run build`.
const child = spawn('npx', ['--no-install', ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, HR_RELAY_FROM_SOURCE: '1' } })
let tail = ''
child.stdout.on('data', chunk => {
  process.stdout.write(chunk)
  tail = (tail + chunk.toString('utf8')).slice(-4096)
})
child.on('close', code => {
  // tap's closing summary: `# { total: 10, pass: 9, fail: 1, skip: 0 }`
  const m = [...tail.matchAll(/^# \{ ([^}]*) \}$/gm)].pop()
  const counts = {}
  for (const part of (m?.[1] ?? '').split(',')) {
    const [k, v] = part.split(':').map(s => s.trim())
    if (k) counts[k] = Number(v)
  }
  const passed = counts.pass ?? 0
  const failed = (counts.fail ?? 0) + (m ? 0 : 1)
  const skipped = (counts.skip ?? 0) + (counts.todo ?? 0)
  console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ''))
  process.exit(code === 0 && failed === 0 ? 0 : 1)
})
