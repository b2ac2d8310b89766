// The chain's membership as PostgreSQL holds it: every member with their pairings, the boxes that receive them and
// the revision (hub/migrations/004-chain.sql), read in one transaction so that a revision always stands for one
// membership. Every member goes to every box. Secrets go as the digests the stores keep: the password's scrypt
// hash and the MQTT password's digest, never anything in clear.
import type pg from 'pg'
import type { DeviceRecord, UserRecord } from '../../api/store/records.ts'
import type { ChainDevice, ChainMember, ChainMembership } from '../../firmware-protocol/upstream.ts'
import { inTransaction } from '../store/pg-op.ts'

/** The PostgreSQL channel the revision's trigger notifies on (payload: the revision), also when a box is added. */
export const CHAIN_CHANNEL = 'hr_chain'

export interface ChainSnapshot {
  revision: number
  /** Every registered box, in the order they were added. */
  boxes: string[]
  members: ChainMember[]
}

export function chainDevice (d: DeviceRecord): ChainDevice {
  const out: ChainDevice = { device_id: d.device_id, kind: d.kind, created_at: d.created_at }
  if (d.name !== undefined) out.name = d.name
  if (d.mqtt_username !== undefined) out.mqtt_username = d.mqtt_username
  if (d.mqtt_password_hash !== undefined) out.mqtt_password_hash = d.mqtt_password_hash
  return out
}

/** The fields of a member a box receives; chain_member_fields() in 004-chain.sql names the same ones. */
export function chainMember (u: UserRecord, devices: readonly DeviceRecord[]): ChainMember {
  const out: ChainMember = { profile_id: u.profile_id, username: u.username, password_hash: u.password_hash, created_at: u.created_at, devices: devices.map(chainDevice) }
  if (u.display_name !== undefined) out.display_name = u.display_name
  if (u.age !== undefined) out.age = u.age
  if (u.weight_kg !== undefined) out.weight_kg = u.weight_kg
  if (u.sex !== undefined) out.sex = u.sex
  if (u.max_heart_rate !== undefined) out.max_heart_rate = u.max_heart_rate
  return out
}

/** Reads the membership, its revision and the boxes in one read-only snapshot. */
export async function readChainSnapshot (pool: pg.Pool): Promise<ChainSnapshot> {
  return await inTransaction(pool, async client => {
    await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
    const revision = (await client.query<{ revision: string }>('SELECT revision FROM chain_revision')).rows[0]?.revision
    if (revision === undefined) throw new Error('chain_revision has no row (hub/migrations/004-chain.sql)')
    const boxes = (await client.query<{ box_id: string }>('SELECT box_id FROM boxes ORDER BY created_at, box_id')).rows.map(r => r.box_id)
    const users = (await client.query<{ record: UserRecord }>('SELECT record FROM users ORDER BY created_at, profile_id')).rows.map(r => r.record)
    const devices = (await client.query<{ record: DeviceRecord }>('SELECT record FROM devices ORDER BY created_at, device_id')).rows.map(r => r.record)
    const byProfile = new Map<string, DeviceRecord[]>()
    for (const d of devices) {
      const list = byProfile.get(d.profile_id)
      if (list === undefined) byProfile.set(d.profile_id, [d])
      else list.push(d)
    }
    return { revision: Number(revision), boxes, members: users.map(u => chainMember(u, byProfile.get(u.profile_id) ?? [])) }
  })
}

/** The message for one box. */
export function membershipFor (snapshot: ChainSnapshot, boxId: string, issuedAt: number): ChainMembership {
  return { box_id: boxId, revision: snapshot.revision, issued_at: issuedAt, members: snapshot.members }
}
