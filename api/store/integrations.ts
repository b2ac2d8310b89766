// Credentials of integrations that read from the embedded MQTT broker (today:
// Home Assistant). `hr-relay admin integration add home-assistant` issues a
// username and a random password; only its SHA-256 digest is stored (192
// random bits, like device passwords in devices.ts), compared in constant
// time. Adding an integration again replaces its password, and listeners hear
// about it so that connections made with the old password are closed.
import { timingSafeEqual } from 'node:crypto'
import type { Store, Sub } from './db.ts'
import { digest, newSecret } from './secrets.ts'

export type IntegrationName = 'home-assistant'
export const INTEGRATION_NAMES: readonly IntegrationName[] = ['home-assistant']

export interface IntegrationRecord {
  name: IntegrationName
  mqtt_username: string
  mqtt_password_hash: string
  created_at: number
}

/** Compared against when the username is unknown, so the answer takes the same time. */
const UNKNOWN = Buffer.alloc(32)

/**
 * The MQTT username of an integration. '@' is outside the device id alphabet
 * ([A-Za-z0-9:_.-]), so an integration can never share a name with a device.
 */
export function integrationUsername (name: IntegrationName): string {
  return `${name}@hr-relay`
}

export class Integrations {
  private readonly sub: Sub<IntegrationRecord>
  private readonly byUser = new Map<string, IntegrationRecord>()
  private readonly replacedListeners = new Set<(name: IntegrationName) => void>()

  constructor (private readonly store: Store) {
    this.sub = store.sub('integrations')
  }

  async load (): Promise<void> {
    this.byUser.clear()
    for await (const record of this.sub.values()) this.byUser.set(record.mqtt_username, record)
  }

  /** Issues (or replaces) the credentials of an integration; the clear-text password is returned only here. */
  async add (name: IntegrationName, now = Date.now()): Promise<{ record: IntegrationRecord, mqtt_password: string }> {
    const password = newSecret(24)
    const record: IntegrationRecord = { name, mqtt_username: integrationUsername(name), mqtt_password_hash: `sha256$${digest(password)}`, created_at: now }
    await this.store.batch([{ type: 'put', sublevel: this.sub, key: name, value: record }], { sync: true })
    const replaced = this.byUser.has(record.mqtt_username)
    this.byUser.set(record.mqtt_username, record)
    if (replaced) for (const fn of this.replacedListeners) fn(name)
    return { record, mqtt_password: password }
  }

  /** Called when an integration's password was replaced; returns the unsubscribe function. */
  onReplaced (fn: (name: IntegrationName) => void): () => void {
    this.replacedListeners.add(fn)
    return () => { this.replacedListeners.delete(fn) }
  }

  /** Checks MQTT credentials in constant time; an unknown username costs the same as a known one. */
  verifyMqtt (username: string, password: string): IntegrationRecord | undefined {
    const record = this.byUser.get(username)
    const stored = record?.mqtt_password_hash
    const expected = stored?.startsWith('sha256$') === true ? Buffer.from(stored.slice(7), 'hex') : UNKNOWN
    const matches = timingSafeEqual(Buffer.from(digest(password), 'hex'), expected)
    return matches && expected !== UNKNOWN ? record : undefined
  }
}
