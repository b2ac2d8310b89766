// Load generators and references run in their own processes (never in the
// server's, never in the orchestrator's event loop). A worker is a TypeScript
// file run through scripts/ts-loader.mjs with an IPC channel; the parent calls its exported
// handlers by name and gets their results back (structured clone, so Maps
// and typed arrays travel as they are).
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

type Handler = (...args: any[]) => unknown
interface Call { id: number, method: string, args: unknown[] }
interface Reply { id: number, ok: boolean, value?: unknown, error?: string }

/**
 * --quick keeps stopped workers for the next scenario that starts the same
 * file with the same environment, when the worker has a `reset` handler
 * (closes its connections, forgets its state): a worker process start costs
 * seconds of CPU (the TypeScript load hook). Full runs start every worker fresh.
 */
let reuse = false
const LOADER = fileURLToPath(new URL('../../scripts/ts-loader.mjs', import.meta.url))
const idle = new Map<string, Worker[]>()

export function reuseWorkers (on: boolean): void { reuse = on }

/** Stops every kept worker (end of the run). */
export async function stopIdleWorkers (): Promise<void> {
  const all = [...idle.values()].flat()
  idle.clear()
  await Promise.all(all.map(async w => { await w.kill() }))
}

export class Worker {
  private seq = 0
  private key = ''
  private released = false
  private readonly pending = new Map<number, { resolve: (v: any) => void, reject: (e: Error) => void, method: string }>()
  private exited = false

  private constructor (readonly name: string, private readonly child: ChildProcess) {
    child.on('message', (m: Reply) => {
      const p = this.pending.get(m.id)
      if (p === undefined) return
      this.pending.delete(m.id)
      if (m.ok) p.resolve(m.value)
      else p.reject(new Error(`${this.name}.${p.method}: ${m.error ?? 'failed'}`))
    })
    child.on('exit', (code, signal) => {
      this.exited = true
      for (const p of this.pending.values()) p.reject(new Error(`worker ${this.name} exited (code ${code}, signal ${signal}) during ${p.method}`))
      this.pending.clear()
    })
  }

  get pid (): number { return this.child.pid ?? -1 }

  /** Forks `bench/workers/<file>` (a path relative to bench/). */
  static async start (file: string, env: Record<string, string> = {}): Promise<Worker> {
    const key = `${file}\n${JSON.stringify(env)}`
    if (reuse) {
      const kept = idle.get(key)?.pop()
      if (kept !== undefined && !kept.exited) { kept.released = false; return kept }
    }
    const path = fileURLToPath(new URL(`../${file}`, import.meta.url))
    const child = fork(path, [], {
      execArgv: ['--import', LOADER, '--max-old-space-size=2048'],
      serialization: 'advanced',
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc']
    })
    const w = new Worker(file, child)
    w.key = key
    await w.call('ping')
    return w
  }

  call<T = unknown> (method: string, ...args: unknown[]): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`worker ${this.name} is not running`))
    const id = ++this.seq
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method })
      this.child.send({ id, method, args } satisfies Call)
    })
  }

  /** Asks the worker to exit (--quick: resets it and keeps it for reuse when it can). */
  async stop (): Promise<void> {
    if (this.exited || this.released) return
    if (reuse) {
      this.released = true
      try {
        await this.call('reset')
        const list = idle.get(this.key) ?? []
        list.push(this)
        idle.set(this.key, list)
        return
      } catch { /* no reset handler, or it failed: stop it */ }
    }
    await this.kill()
  }

  /** Asks the worker to exit; kills it after 5 s. */
  async kill (): Promise<void> {
    if (this.exited) return
    const gone = new Promise<void>(resolve => { this.child.once('exit', () => { resolve() }) })
    this.child.disconnect()
    const timer = setTimeout(() => { this.child.kill('SIGKILL') }, 5000)
    await gone
    clearTimeout(timer)
  }
}

/** The worker side: answers calls by handler name; exits when the parent disconnects. */
export function serve (handlers: Record<string, Handler>): void {
  const all: Record<string, Handler> = { ping: () => 'pong', ...handlers }
  process.on('message', (m: Call) => {
    const h = all[m.method]
    const reply = (r: Omit<Reply, 'id'>): void => { process.send?.({ id: m.id, ...r }) }
    if (h === undefined) { reply({ ok: false, error: `no handler ${m.method}` }); return }
    Promise.resolve().then(() => h(...m.args)).then(
      value => { reply({ ok: true, value }) },
      (err: unknown) => { reply({ ok: false, error: err instanceof Error ? `${err.message}` : String(err) }) })
  })
  process.on('disconnect', () => { process.exit(0) })
}

/**
 * Starts two things at once (a server and a worker, two workers); when one
 * fails, the other is stopped before the error is thrown.
 */
export async function bothOrNeither<A extends { stop (): Promise<void> }, B extends { stop (): Promise<void> }> (a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [ra, rb] = await Promise.allSettled([a, b])
  if (ra.status === 'fulfilled' && rb.status === 'fulfilled') return [ra.value, rb.value]
  if (ra.status === 'fulfilled') await ra.value.stop()
  if (rb.status === 'fulfilled') await rb.value.stop()
  throw ra.status === 'rejected' ? ra.reason : (rb as PromiseRejectedResult).reason
}

/** High-resolution wall clock in ms, comparable across processes on one machine. */
export function now (): number {
  return performance.timeOrigin + performance.now()
}
