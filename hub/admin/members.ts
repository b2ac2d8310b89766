// `hr-relay hub admin user …` and `device …`: the chain's members and their straps, enrolled at the hub. Each
// change is one write through the stores, and the revision's trigger (hub/migrations/004-chain.sql) bumps the
// chain's revision and notifies the hub's instances in that write's transaction, so a running instance republishes
// the membership to every box; with none running, the next one to start does.
import { Type, type Static } from '@sinclair/typebox'
import { Ajv } from 'ajv'
import { Enum } from '../../api/http/schema.ts'
import { PREMIUM_PLANS, UserExistsError, publicUser } from '../../api/store/users.ts'
import { DeviceExistsError, InvalidAntDeviceIdError, InvalidDeviceIdError } from '../../api/store/devices.ts'
import type { DeviceKind, UserRecord } from '../../api/store/records.ts'
import { eraseChainMember, type HubErasureCounts } from '../membership/erase.ts'
import { defineCommand, numberFlag, refused, stringFlag, usageError, type AdminContext, type HubAdminCommand } from './command.ts'

/**
 * A member's account as the box's admin API takes it (api/http/admin.ts), within what every box accepts in a
 * membership message (firmware-protocol/upstream.ts decodeMembership): a username of at most 64 characters and a
 * display name that is not empty.
 */
const NewMember = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 64, pattern: '^[^\\s/\\\\]+$' }),
  password: Type.String({ minLength: 8, maxLength: 1024 }),
  premium: Type.Optional(Enum(PREMIUM_PLANS)),
  channel: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  age: Type.Optional(Type.Integer({ minimum: 1, maximum: 130 })),
  weight_kg: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 500 })),
  sex: Type.Optional(Enum(['male', 'female'])),
  max_heart_rate: Type.Optional(Type.Integer({ minimum: 60, maximum: 260 }))
}, { additionalProperties: false })

const checkNewMember = new Ajv({ allErrors: true, strict: false }).compile<Static<typeof NewMember>>(NewMember)

/** The options of each field, for messages that name what the operator typed. */
const OPTION_OF: Record<string, string> = { display_name: 'display-name', weight_kg: 'weight-kg', max_heart_rate: 'max-heart-rate' }

/** The kinds a strap enrolled at the hub can be: a serial device is a cable to one box, not the chain's. */
const HUB_KINDS: readonly DeviceKind[] = ['mqtt', 'ble', 'ant']

export async function memberNamed (ctx: AdminContext, username: string): Promise<UserRecord> {
  const user = await (await ctx.stores()).users.byUsername(username)
  if (user === undefined) throw refused(`no user ${username}`)
  return user
}

interface PairedDevice { device_id: string, profile_id: string, kind: string, mqtt_username: string | null, mqtt_password: string | null }

function pairedText (r: PairedDevice): string {
  const first = `paired ${r.device_id} (${r.kind}) with profile ${r.profile_id}`
  return r.mqtt_password === null
    ? first
    : [first, `mqtt_username: ${String(r.mqtt_username)}`, `mqtt_password: ${r.mqtt_password}`, '(the password is shown only now; the hub keeps only a digest)'].join('\n')
}

export const MEMBER_COMMANDS: HubAdminCommand[] = [
  defineCommand({
    words: ['user', 'add'],
    usage: 'user add <username> --password <p> [--display-name N] [--age N --weight-kg N --sex male|female] [--max-heart-rate N] [--premium none|trial|subscription|lifetime] [--channel C]',
    args: ['username'],
    options: { password: { type: 'string' }, premium: { type: 'string' }, channel: { type: 'string' }, 'display-name': { type: 'string' }, age: { type: 'string' }, 'weight-kg': { type: 'string' }, sex: { type: 'string' }, 'max-heart-rate': { type: 'string' } },
    run: async (ctx, [username], f) => {
      if (typeof f.password !== 'string') throw usageError('--password is required')
      const input = Object.fromEntries(Object.entries({
        username,
        password: f.password,
        premium: stringFlag(f.premium),
        channel: stringFlag(f.channel),
        display_name: stringFlag(f['display-name']),
        age: numberFlag(f.age, 'age'),
        weight_kg: numberFlag(f['weight-kg'], 'weight-kg'),
        sex: stringFlag(f.sex),
        max_heart_rate: numberFlag(f['max-heart-rate'], 'max-heart-rate')
      }).filter(([, v]) => v !== undefined))
      if (!checkNewMember(input)) {
        const e = checkNewMember.errors?.[0]
        const field = e?.instancePath.slice(1) ?? ''
        const allowed = (e?.params as { allowedValues?: unknown[] } | undefined)?.allowedValues
        const message = allowed !== undefined ? `must be one of ${allowed.join(', ')}` : e?.message ?? 'is invalid'
        throw usageError(`${field === 'username' ? '<username>' : `--${OPTION_OF[field] ?? field}`} ${message}`)
      }
      try {
        const user = await (await ctx.stores()).users.create(input)
        return { profile_id: user.profile_id, username: user.username }
      } catch (err) {
        if (err instanceof UserExistsError) throw refused(err.message, err)
        throw err
      }
    }
  }),
  defineCommand({
    words: ['user', 'list'],
    usage: 'user list',
    args: [],
    run: async ctx => ({ users: (await (await ctx.stores()).users.list()).map(publicUser) }),
    human: r => r.users.map(u => `${u.username}\t${u.profile_id}\tpremium=${u.premium.plan}`).join('\n') || '(no users)'
  }),
  defineCommand({
    words: ['user', 'delete'],
    usage: 'user delete <username>',
    args: ['username'],
    run: async (ctx, [username]) => {
      const user = await memberNamed(ctx, username as string)
      return { username: user.username, erased: await eraseChainMember(await ctx.stores(), user) }
    },
    human: (r: { username: string, erased: HubErasureCounts }) => {
      const parts = Object.entries(r.erased).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k.replace(/_/g, ' ')}`)
      return `erased ${r.username} at the hub: ${parts.join(', ')}; every box erases them on receiving the next membership`
    }
  }),
  defineCommand({
    // The box's `device pair`, named from the member's side: `device pair ann --kind ant --device-id ant:12345`.
    words: ['device', 'pair'],
    usage: `device pair <username> --kind ${HUB_KINDS.join('|')} --device-id <device_id> [--name N]`,
    args: ['username'],
    options: { 'device-id': { type: 'string' }, kind: { type: 'string' }, name: { type: 'string' } },
    run: async (ctx, [username], f): Promise<PairedDevice> => {
      const deviceId = stringFlag(f['device-id'])
      if (deviceId === undefined) throw usageError('--device-id is required')
      const kind = HUB_KINDS.find(k => k === f.kind)
      if (kind === undefined) throw usageError(`--kind must be one of ${HUB_KINDS.join(', ')}`)
      const name = stringFlag(f.name)
      if (name !== undefined && (name.length === 0 || name.length > 100)) throw usageError('--name must be 1 to 100 characters')
      const user = await memberNamed(ctx, username as string)
      const stores = await ctx.stores()
      // A box tells paired devices apart regardless of case (decodeMembership): two ids that differ in case alone
      // would make every membership message one the boxes refuse.
      const twin = stores.devices.list().find(d => d.device_id.toUpperCase() === deviceId.toUpperCase())
      if (twin !== undefined) throw refused(`device ${deviceId} is already paired${twin.device_id === deviceId ? '' : ` (as ${twin.device_id})`}`)
      try {
        const { device, mqtt_password: password } = await stores.devices.add({ device_id: deviceId, profile_id: user.profile_id, kind, ...(name === undefined ? {} : { name }) })
        return { device_id: device.device_id, profile_id: device.profile_id, kind: device.kind, mqtt_username: device.mqtt_username ?? null, mqtt_password: password }
      } catch (err) {
        if (err instanceof DeviceExistsError || err instanceof InvalidDeviceIdError || err instanceof InvalidAntDeviceIdError) throw refused(err.message, err)
        throw err
      }
    },
    human: pairedText
  }),
  defineCommand({
    words: ['device', 'list'],
    usage: 'device list',
    args: [],
    run: async ctx => {
      const stores = await ctx.stores()
      const names = new Map((await stores.users.list()).map(u => [u.profile_id, u.username]))
      return {
        devices: stores.devices.list().map(d => ({
          device_id: d.device_id,
          profile_id: d.profile_id,
          username: names.get(d.profile_id) ?? null,
          kind: d.kind,
          ...(d.name === undefined ? {} : { name: d.name }),
          mqtt_username: d.mqtt_username ?? null,
          created_at: d.created_at
        }))
      }
    },
    human: r => r.devices.map(d => `${d.device_id}\t${d.kind}\t${d.username ?? d.profile_id}\t${d.name ?? ''}`).join('\n') || '(no paired devices)'
  }),
  defineCommand({
    words: ['device', 'remove'],
    usage: 'device remove <device_id>',
    args: ['device_id'],
    run: async (ctx, [deviceId]) => {
      const removed = await (await ctx.stores()).devices.remove(deviceId as string)
      if (removed === undefined) throw refused(`no paired device ${String(deviceId)}`)
      return { device_id: removed.device_id, removed: true }
    },
    human: r => `unpaired ${r.device_id}; every box unpairs it on receiving the next membership`
  })
]
