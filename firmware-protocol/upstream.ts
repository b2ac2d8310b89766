// The upstream wire format: what a box publishes to the upstream broker and a hub reads back
// (docs/integrations.md "Upstream bridge", docs/hub.md). Both directions live here, so that the box that writes
// a topic and the hub that parses it agree by construction. Pure: no I/O.
//
// Topics: `<prefix>/users/<profile_id>/heart_rate` (a stored reading) and `<prefix>/users/<profile_id>/erased`
// (a member's erasure). A box in a chain uses the prefix `<chain_root>/boxes/<box_id>`, which is how the hub
// learns which box a message came from.
import { checkReading } from './reading-contract.ts'

/** What a reading message carries: the specification's reading shape plus its source and, when known, device. */
export interface UpstreamReading {
  measured_at: number
  heart_rate: number
  source: string
  device_id?: string
}

export function upstreamTopic (prefix: string, profileId: string): string {
  return `${prefix.replace(/\/+$/, '')}/users/${profileId}/heart_rate`
}

export function erasureTopic (prefix: string, profileId: string): string {
  return `${prefix.replace(/\/+$/, '')}/users/${profileId}/erased`
}

export function upstreamPayload (r: UpstreamReading): string {
  return JSON.stringify({
    measured_at: r.measured_at,
    data: { heart_rate: r.heart_rate },
    source: r.source,
    ...(r.device_id === undefined ? {} : { device_id: r.device_id })
  })
}

export function erasurePayload (profileId: string, erasedAt: number): string {
  return JSON.stringify({ profile_id: profileId, erased_at: erasedAt })
}

/** The topic prefix of a box in a chain whose topics start at `root`. */
export function chainBoxPrefix (root: string, boxId: string): string {
  return `${root.replace(/\/+$/, '')}/boxes/${boxId}`
}

/** The MQTT topic filters a hub subscribes to under `root`, readings first. */
export function chainFilters (root: string): [readings: string, erasures: string] {
  const base = `${root.replace(/\/+$/, '')}/boxes/+/users/+`
  return [`${base}/heart_rate`, `${base}/erased`]
}

/** A box id or profile id as it may appear in a topic: one level, no wildcard, 1 to 64 characters. */
const ID = /^[A-Za-z0-9._:-]{1,64}$/

export type ChainMessage =
  | { kind: 'reading', box_id: string, profile_id: string, reading: UpstreamReading }
  | { kind: 'erasure', box_id: string, profile_id: string, erased_at: number }

/** Why a message under the chain's topics is not one of ours; the message is then acknowledged and not stored. */
export interface ChainMessageError { error: string }

/** Decodes a message under `<root>/boxes/<box_id>/users/<profile_id>/(heart_rate|erased)`. */
export function decodeChainMessage (root: string, topic: string, payload: Uint8Array): ChainMessage | ChainMessageError {
  const head = `${root.replace(/\/+$/, '')}/boxes/`
  if (!topic.startsWith(head)) return { error: 'topic outside the chain root' }
  const parts = topic.slice(head.length).split('/')
  if (parts.length !== 4 || parts[1] !== 'users') return { error: 'topic is not <box_id>/users/<profile_id>/<kind>' }
  const [boxId, , profileId, kind] = parts as [string, string, string, string]
  if (!ID.test(boxId)) return { error: 'box id is not 1 to 64 of A-Z a-z 0-9 . _ : -' }
  if (!ID.test(profileId)) return { error: 'profile id is not 1 to 64 of A-Z a-z 0-9 . _ : -' }
  let body: unknown
  try { body = JSON.parse(Buffer.from(payload).toString('utf8')) } catch { return { error: 'payload is not JSON' } }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { error: 'payload is not a JSON object' }
  const b = body as Record<string, unknown>
  if (kind === 'erased') {
    if (b.profile_id !== profileId) return { error: 'erasure profile_id differs from the topic' }
    const at = b.erased_at
    if (typeof at !== 'number' || !Number.isInteger(at) || at < 0) return { error: 'erased_at is not Unix ms' }
    return { kind: 'erasure', box_id: boxId, profile_id: profileId, erased_at: at }
  }
  if (kind !== 'heart_rate') return { error: `unknown message kind ${kind}` }
  const data = b.data
  const heartRate = data !== null && typeof data === 'object' ? (data as Record<string, unknown>).heart_rate : undefined
  const violation = checkReading({ measured_at: b.measured_at, heart_rate: heartRate })
  if (violation !== undefined) return { error: `${violation.path === '/heart_rate' ? '/data/heart_rate' : violation.path} ${violation.message}` }
  // Boxes store and forward positive readings only (spec 8.2): anything else is not a stored reading.
  if ((heartRate as number) <= 0) return { error: '/data/heart_rate must be above 0' }
  if (typeof b.source !== 'string' || b.source.length === 0 || b.source.length > 32) return { error: 'source must be a string of 1 to 32 characters' }
  if (b.device_id !== undefined && (typeof b.device_id !== 'string' || b.device_id.length > 64)) return { error: 'device_id must be a string of at most 64 characters' }
  return {
    kind: 'reading',
    box_id: boxId,
    profile_id: profileId,
    reading: { measured_at: Math.floor(b.measured_at as number), heart_rate: heartRate as number, source: b.source, ...(typeof b.device_id === 'string' ? { device_id: b.device_id } : {}) }
  }
}
