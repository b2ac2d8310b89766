// Deadlines and abortable waits for BlueZ calls. node-ble has no timeouts
// (gatt() waits forever for ServicesResolved; a call on a dead bus never
// settles), so every call the BLE source makes goes through withDeadline.
import { BleError } from './errors.ts'

/**
 * Settles like `promise`, or rejects with BleError('timeout') after `ms`, or
 * with BleError('stopped') when `signal` aborts. The timer is always cleared.
 * A late rejection of `promise` is swallowed (nobody awaits it any more).
 */
export async function withDeadline<T> (promise: Promise<T>, ms: number, what: string, signal?: AbortSignal): Promise<T> {
  promise.catch(() => {})
  if (signal?.aborted === true) throw new BleError('stopped')
  let timer: NodeJS.Timeout | undefined
  let onAbort: (() => void) | undefined
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => { reject(new BleError('timeout', `${what} after ${ms} ms`)) }, ms)
        if (signal !== undefined) {
          onAbort = () => { reject(new BleError('stopped')) }
          signal.addEventListener('abort', onAbort, { once: true })
        }
      })
    ])
  } finally {
    clearTimeout(timer)
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort)
  }
}

/** Resolves after `ms`, or early (without error) when `signal` aborts. */
export async function sleep (ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted === true) return
  await new Promise<void>(resolve => {
    const done = (): void => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}
