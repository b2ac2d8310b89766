// How long a thread has waited for a core: the journal tells a slow disk from a busy CPU with it, and the ingest
// pipeline tells whether other processes keep the event loop's thread off the cores.
import { closeSync, openSync, readSync } from 'node:fs'

/**
 * How long the calling thread has waited for a core so far (ms: the second field of /proc/thread-self/schedstat),
 * so that a write's time on the disk can be told from the time its thread then waited for a core. Beside busy
 * processes that wait is most of a write's wall time, and it says nothing of the disk. 0 where the kernel keeps no
 * schedstat (a write's wall time is then its time on the disk).
 */
export class CoreWait {
  /** null until the first reading; undefined where there is no such file. */
  private fd: number | null | undefined = null
  private readonly buf = Buffer.alloc(64)

  ms (): number {
    if (this.fd === null) {
      try { this.fd = openSync('/proc/thread-self/schedstat', 'r') } catch { this.fd = undefined }
    }
    if (this.fd === undefined) return 0
    try {
      const line = this.buf.toString('latin1', 0, readSync(this.fd, this.buf, 0, this.buf.length, 0))
      const ns = Number(line.split(' ')[1])
      return Number.isFinite(ns) ? ns / 1e6 : 0
    } catch {
      this.close()
      return 0
    }
  }

  close (): void {
    if (typeof this.fd === 'number') closeSync(this.fd)
    this.fd = undefined
  }
}
