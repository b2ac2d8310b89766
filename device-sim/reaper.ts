// Helper processes (dbus-daemon, socat) must not outlive the process that
// started them, even when it is killed with SIGKILL and cannot clean up.
// A tiny `sh` guardian holds a pipe from us; when the pipe closes (we exited,
// however) it terminates the helper. Neither the guardian nor its pipe keeps
// our event loop alive.
import { spawn } from 'node:child_process'

export interface Reaper {
  /** Releases the guardian once the helper was stopped in order. */
  release (): void
}

export function reapWithParent (helperPid: number | undefined, options: { detached?: boolean } = {}): Reaper {
  if (helperPid === undefined) return { release () {} }
  const guardian = spawn('sh', ['-c', 'read _ignored; kill -TERM "$1" 2>/dev/null', 'hr-relay-reaper', String(helperPid)], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: options.detached === true
  })
  guardian.on('error', () => {})
  guardian.stdin?.on('error', () => {})
  guardian.unref()
  ;(guardian.stdin as unknown as { unref?: () => void } | null)?.unref?.()
  let released = false
  return {
    release () {
      if (released) return
      released = true
      // The helper is already stopped: end the guardian without it signalling anything.
      guardian.kill('SIGKILL')
    }
  }
}
