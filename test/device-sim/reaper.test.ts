// dbus-daemon and socat started by the simulator die with the process that
// started them, even when that process is killed with SIGKILL.
import t from 'tap'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const FIXTURE = fileURLToPath(new URL('./fixtures/helpers-then-wait.ts', import.meta.url))

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch { return false }
}

for (const mode of ['attached', 'detached']) {
  t.test(`helpers (${mode}) are reaped when their owner is SIGKILLed`, async t => {
    const child = spawn(process.execPath, ['--import', fileURLToPath(new URL('../../scripts/ts-loader.mjs', import.meta.url)), FIXTURE, mode], { stdio: ['ignore', 'pipe', 'inherit'] })
    const pids = await new Promise<Record<string, number>>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', d => { out += d; const nl = out.indexOf('\n'); if (nl >= 0) resolve(JSON.parse(out.slice(0, nl))) })
      child.once('exit', code => { reject(new Error(`fixture exited ${String(code)}`)) })
    })
    t.type(pids['dbus-daemon'], 'number')
    t.type(pids.socat, 'number')
    t.ok(alive(pids['dbus-daemon']!) && alive(pids.socat!), 'both running')
    child.kill('SIGKILL')
    for (let i = 0; i < 100 && (alive(pids['dbus-daemon']!) || alive(pids.socat!)); i++) await new Promise(r => setTimeout(r, 50))
    t.notOk(alive(pids['dbus-daemon']!), 'dbus-daemon is gone')
    t.notOk(alive(pids.socat!), 'socat is gone')
  })
}
