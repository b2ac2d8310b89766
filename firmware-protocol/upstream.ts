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

// Chain membership, from the hub to each box (docs/hub.md "Members of the chain"): one retained message per box
// at `<root>/boxes/<box_id>/members`, the whole list of the chain's members and their pairings. A box applies the
// newest revision it has seen and keeps it while the hub or the broker is away; a chain member missing from a
// newer revision was erased at the hub, and the box erases them too. Secrets travel as the digests the stores
// keep (scrypt), never in clear.

/** One paired device of a chain member, as a box stores it (api/store/records.ts DeviceRecord). */
export interface ChainDevice {
  device_id: string
  kind: 'ble' | 'serial' | 'mqtt' | 'ant' | 'any'
  name?: string
  mqtt_username?: string
  mqtt_password_hash?: string
  created_at: number
}

/** One member of the chain: the account fields a box needs to show, sign in and attribute their readings. */
export interface ChainMember {
  profile_id: string
  username: string
  password_hash: string
  display_name?: string
  age?: number
  weight_kg?: number
  sex?: 'male' | 'female'
  max_heart_rate?: number
  created_at: number
  devices: ChainDevice[]
}

export interface ChainMembership {
  box_id: string
  /** Grows with every change at the hub; a box ignores a revision lower than one it applied. */
  revision: number
  issued_at: number
  members: ChainMember[]
}

export function membersTopic (root: string, boxId: string): string {
  return `${chainBoxPrefix(root, boxId)}/members`
}

export function membershipPayload (m: ChainMembership): string {
  return JSON.stringify({ v: 1, ...m })
}

const KINDS = new Set(['ble', 'serial', 'mqtt', 'ant', 'any'])
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
const isText = (v: unknown, max: number): v is string => typeof v === 'string' && v.length > 0 && v.length <= max
const optional = (v: unknown, ok: (v: unknown) => boolean): boolean => v === undefined || ok(v)

function decodeDevice (d: unknown, at: string): ChainDevice | string {
  if (d === null || typeof d !== 'object' || Array.isArray(d)) return `${at} is not an object`
  const o = d as Record<string, unknown>
  if (!isText(o.device_id, 64)) return `${at}/device_id must be a string of 1 to 64 characters`
  if (typeof o.kind !== 'string' || !KINDS.has(o.kind)) return `${at}/kind must be one of ble, serial, mqtt, ant, any`
  if (!optional(o.name, v => isText(v, 200))) return `${at}/name must be a string of 1 to 200 characters`
  if (!optional(o.mqtt_username, v => isText(v, 128))) return `${at}/mqtt_username must be a string of 1 to 128 characters`
  if (!optional(o.mqtt_password_hash, v => isText(v, 512))) return `${at}/mqtt_password_hash must be a digest string`
  if (!isInt(o.created_at)) return `${at}/created_at is not Unix ms`
  return {
    device_id: o.device_id,
    kind: o.kind as ChainDevice['kind'],
    ...(o.name === undefined ? {} : { name: o.name as string }),
    ...(o.mqtt_username === undefined ? {} : { mqtt_username: o.mqtt_username as string }),
    ...(o.mqtt_password_hash === undefined ? {} : { mqtt_password_hash: o.mqtt_password_hash as string }),
    created_at: o.created_at
  }
}

function decodeMember (m: unknown, at: string): ChainMember | string {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return `${at} is not an object`
  const o = m as Record<string, unknown>
  if (typeof o.profile_id !== 'string' || !ID.test(o.profile_id)) return `${at}/profile_id is not 1 to 64 of A-Z a-z 0-9 . _ : -`
  if (!isText(o.username, 64)) return `${at}/username must be a string of 1 to 64 characters`
  if (!isText(o.password_hash, 512)) return `${at}/password_hash must be a digest string`
  if (!optional(o.display_name, v => isText(v, 200))) return `${at}/display_name must be a string of 1 to 200 characters`
  for (const k of ['age', 'weight_kg', 'max_heart_rate'] as const) {
    if (!optional(o[k], v => typeof v === 'number' && Number.isFinite(v) && v > 0 && v < 1000)) return `${at}/${k} must be a positive number below 1000`
  }
  if (!optional(o.sex, v => v === 'male' || v === 'female')) return `${at}/sex must be male or female`
  if (!isInt(o.created_at)) return `${at}/created_at is not Unix ms`
  if (!Array.isArray(o.devices)) return `${at}/devices is not an array`
  const devices: ChainDevice[] = []
  for (const [i, d] of o.devices.entries()) {
    const device = decodeDevice(d, `${at}/devices/${i}`)
    if (typeof device === 'string') return device
    devices.push(device)
  }
  const out: ChainMember = { profile_id: o.profile_id, username: o.username, password_hash: o.password_hash, created_at: o.created_at, devices }
  if (o.display_name !== undefined) out.display_name = o.display_name as string
  if (o.age !== undefined) out.age = o.age as number
  if (o.weight_kg !== undefined) out.weight_kg = o.weight_kg as number
  if (o.sex !== undefined) out.sex = o.sex as 'male' | 'female'
  if (o.max_heart_rate !== undefined) out.max_heart_rate = o.max_heart_rate as number
  return out
}

/** Decodes a membership message for `boxId`; a string says what is wrong, and nothing of it is applied. */
export function decodeMembership (boxId: string, payload: Uint8Array): ChainMembership | ChainMessageError {
  let body: unknown
  try { body = JSON.parse(Buffer.from(payload).toString('utf8')) } catch { return { error: 'payload is not JSON' } }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { error: 'payload is not a JSON object' }
  const b = body as Record<string, unknown>
  if (b.v !== 1) return { error: 'unknown membership format version (v must be 1)' }
  if (b.box_id !== boxId) return { error: `membership is for box ${String(b.box_id)}, not ${boxId}` }
  if (!isInt(b.revision)) return { error: 'revision must be a non-negative integer' }
  if (!isInt(b.issued_at)) return { error: 'issued_at is not Unix ms' }
  if (!Array.isArray(b.members)) return { error: 'members is not an array' }
  const members: ChainMember[] = []
  const seenProfiles = new Set<string>(); const seenNames = new Set<string>(); const seenDevices = new Set<string>()
  for (const [i, m] of b.members.entries()) {
    const member = decodeMember(m, `/members/${i}`)
    if (typeof member === 'string') return { error: member }
    if (seenProfiles.has(member.profile_id)) return { error: `/members/${i}/profile_id repeats ${member.profile_id}` }
    const name = member.username.toLowerCase()
    if (seenNames.has(name)) return { error: `/members/${i}/username repeats ${member.username}` }
    for (const d of member.devices) {
      const id = d.device_id.toUpperCase()
      if (seenDevices.has(id)) return { error: `/members/${i} pairs device ${d.device_id}, already paired to another member` }
      seenDevices.add(id)
    }
    seenProfiles.add(member.profile_id); seenNames.add(name)
    members.push(member)
  }
  return { box_id: boxId, revision: b.revision, issued_at: b.issued_at, members }
}
