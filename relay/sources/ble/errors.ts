// The BLE source's error table. Callers branch on `code` (or, for errors that
// come from BlueZ, on the D-Bus error name via bluezErrorName), never on text.

export const BLE_ERRORS = {
  no_bluez: 'no BlueZ on the system bus',
  no_adapter: 'the Bluetooth adapter is not there',
  timeout: 'BlueZ did not answer in time',
  no_hr_service: 'the device has no Heart Rate service',
  vanished: 'the device is no longer known to BlueZ',
  stopped: 'the BLE source was stopped'
} as const satisfies Record<string, string>

export type BleErrorCode = keyof typeof BLE_ERRORS

export class BleError extends Error {
  readonly code: BleErrorCode
  constructor (code: BleErrorCode, detail?: string, options?: { cause?: unknown }) {
    super(detail === undefined ? BLE_ERRORS[code] : `${BLE_ERRORS[code]} (${detail})`, options)
    this.name = 'BleError'
    this.code = code
  }
}

export function isBleError (err: unknown, code?: BleErrorCode): err is BleError {
  return err instanceof BleError && (code === undefined || err.code === code)
}

/** The D-Bus error name of an error a node-ble / dbus-next call rejected with, if any. */
export function bluezErrorName (err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'DBusError') {
    const type = (err as { type?: unknown }).type
    return typeof type === 'string' ? type : undefined
  }
  return undefined
}

/** BlueZ errors after which the source retries the device with backoff. */
export const RETRYABLE_BLUEZ_ERRORS: ReadonlySet<string> = new Set([
  'org.bluez.Error.InProgress',
  'org.bluez.Error.Failed',
  'org.bluez.Error.NotReady',
  'org.bluez.Error.NotConnected',
  'org.freedesktop.DBus.Error.UnknownObject'
])

/** D-Bus errors meaning nobody owns org.bluez (bluetoothd is not running). */
const NO_OWNER_ERRORS: ReadonlySet<string> = new Set([
  'org.freedesktop.DBus.Error.ServiceUnknown',
  'org.freedesktop.DBus.Error.NameHasNoOwner'
])

/** Short reason for a status detail or log line; never includes payloads. */
export function describeError (err: unknown): string {
  const name = bluezErrorName(err)
  if (name !== undefined) {
    const text = (err as { text?: unknown }).text
    return typeof text === 'string' && text !== '' ? `${name}: ${text}` : name
  }
  if (err instanceof BleError) return err.message
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code
    return code !== undefined && !err.message.includes(code) ? `${code}: ${err.message}` : err.message
  }
  return String(err)
}

/** True when `err` says the system bus or bluetoothd is not reachable. */
export function isNoBluez (err: unknown): boolean {
  if (isBleError(err, 'no_bluez')) return true
  const name = bluezErrorName(err)
  return name !== undefined && NO_OWNER_ERRORS.has(name)
}
