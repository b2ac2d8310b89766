// Load generators and references run in their own processes (never in the
// server's, never in the orchestrator's event loop). A worker is a TypeScript
// file run through tsx with an IPC channel; the parent calls its exported
// handlers by name and gets their results back (structured clone, so Maps
// and typed arrays travel as they are).
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

type Handler = (...args: any[]) => unknown
interface Call { id: number, method: string, args: unknown[] }
interface Reply { id: number, ok: boolean, value?: unknown, error?: string }

export class Worker {
  private seq = 0
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
    const path = fileURLToPath(new URL(`../${file}`, import.meta.url))
    const child = fork(path, [], {
      execArgv: ['--import', 'tsx', '--max-old-space-size=2048'],
      serialization: 'advanced',
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc']
    })
    const w = new Worker(file, child)
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

  /** Asks the worker to exit; kills it after 5 s. */
  async stop (): Promise<void> {
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

/** High-resolution wall clock in ms, comparable across processes on one machine. */
export function now (): number {
  return performance.timeOrigin + performance.now()
}
