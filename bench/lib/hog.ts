// The CPU hog of the contention scenarios: one busy process per core
// (`node -e 'for(;;){}'`), as a kiosk browser, BlueZ and other jobs share a
// relay box's cores. Started and stopped by the scenario around the window.
import { spawn, type ChildProcess } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { availableParallelism, setPriority } from 'node:os'
import { processState } from './cpu.ts'

export interface Hog { processes: number, stop (): Promise<void> }

export function startHog (processes = availableParallelism()): Hog {
  const children: ChildProcess[] = []
  for (let i = 0; i < processes; i++) children.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }))
  return {
    processes,
    stop: async () => {
      await Promise.all(children.map(async c => {
        if (c.exitCode !== null || c.signalCode !== null) return
        const gone = new Promise<void>(resolve => { c.once('exit', () => { resolve() }) })
        c.kill('SIGKILL')
        await gone
      }))
    }
  }
}

/** Pins every thread of a running process to `cpus` (a taskset list such as "0" or "0-1"). */
export async function pinProcess (pid: number, cpus: string): Promise<void> {
  const child = spawn('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr.on('data', (c: Buffer) => { err += c.toString('utf8') })
  const code = await new Promise<number | null>(resolve => { child.once('exit', resolve) })
  if (code !== 0) throw new Error(`taskset -a -p -c ${cpus} ${pid} failed (exit ${code}): ${err.trim()}`)
}

/** Every CPU of this machine as a taskset list ("0-1" on 2 cores). */
export function allCpus (): string {
  return `0-${availableParallelism() - 1}`
}

/**
 * Sets the nice value of every thread of a running process, as systemd's `Nice=` does for a service (on Linux a
 * nice value belongs to a thread; the threads a process starts later inherit their creator's). A negative value
 * needs root or CAP_SYS_NICE: returns false when it is not permitted (the scenario then skips its window).
 */
export async function reniceProcess (pid: number, nice: number): Promise<boolean> {
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    try {
      setPriority(Number(tid), nice)
    } catch (err) {
      const code = (err as { info?: { code?: string } }).info?.code
      if (code === 'ESRCH') continue // the thread ended in between
      if (code === 'EACCES' || code === 'EPERM') return false
      throw err
    }
  }
  return true
}

/**
 * Stops (SIGSTOP) or continues (SIGCONT) each process that is still there, and waits until /proc shows each
 * stopped or not (a signal is taken when the process next runs: beside a hog, not at once), at most 2 s.
 */
export async function signalAll (pids: readonly number[], signal: 'SIGSTOP' | 'SIGCONT'): Promise<void> {
  for (const pid of pids) {
    try { process.kill(pid, signal) } catch { /* gone: its owner reports the failure */ }
  }
  const stopped = signal === 'SIGSTOP'
  const deadline = performance.now() + 2000
  for (const pid of pids) {
    for (;;) {
      const state = await processState(pid)
      if (state === undefined || (state === 'T') === stopped || performance.now() > deadline) break
      await new Promise(resolve => setTimeout(resolve, 1))
    }
  }
}
