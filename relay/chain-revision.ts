// How a box applies one revision of the chain's membership (relay/chain-members.ts receives it; docs/hub.md "How a
// box applies the chain's members"), in this order:
// 1. Erasures: every chain member the box holds who is missing from the revision was erased at the hub, and is
//    erased here with the full erasure of api/privacy/erase.ts (readings down to the bytes, tokens, devices, the
//    upstream's queue and its notice to the hub).
// 2. Members: each one is created with the hub's profile id, username, password digest and profile fields, or
//    updated (box-local state such as room_hidden, consents, the ingestion pause and Home Assistant stays). A
//    member whose profile id or username is a box-local member's is refused, logged and counted; the rest of the
//    revision is applied. A username that another chain member gives up in the same revision is free once that
//    member was renamed: members are applied in rounds until no round makes progress.
// 3. Pairings: each member's devices are paired with the hub's digests; chain devices no longer listed for them
//    are unpaired; a device the hub moved from another chain member is unpaired there and paired here. A device
//    paired to a box-local member is refused.
// The ledger (relay/chain-members.ts) names a chain member or device before it is created or paired, so that a
// crash leaves work to finish on the next revision, never a chain member the box would take for its own.
import type { Logger } from 'pino'
import { UserExistsError, type ImportedUser, type UserRecord, type Users } from '../api/store/users.ts'
import { DeviceExistsError, InvalidAntDeviceIdError, InvalidDeviceIdError, normalizeDeviceId, type Devices } from '../api/store/devices.ts'
import { eraseMember, rewriteAfterNotice, type EraseUses } from '../api/privacy/erase.ts'
import type { ChainMember, ChainMembership } from '../firmware-protocol/upstream.ts'

/** What the box holds of the chain: the chain members and the devices paired from the chain, durably. */
export interface ChainLedger {
  /** Profile id → the device ids paired from the chain. */
  readonly members: ReadonlyMap<string, ReadonlySet<string>>
  remember (profileId: string, devices: Iterable<string>): Promise<void>
  forget (profileId: string): Promise<void>
}

export interface ApplyDeps {
  users: Users
  devices: Devices
  /** What a member's erasure uses: the service's bag with its erasure hooks (the upstream's). */
  erase: EraseUses
  ledger: ChainLedger
  log: Logger
}

/** What applying a revision did, counted. */
export interface RevisionOutcome {
  created: number
  updated: number
  erased: number
  refused_members: number
  paired: number
  unpaired: number
  refused_devices: number
}

export async function applyRevision (m: ChainMembership, deps: ApplyDeps): Promise<RevisionOutcome> {
  const out: RevisionOutcome = { created: 0, updated: 0, erased: 0, refused_members: 0, paired: 0, unpaired: 0, refused_devices: 0 }
  const listed = new Set(m.members.map(member => member.profile_id))
  for (const profileId of [...deps.ledger.members.keys()]) {
    if (listed.has(profileId)) continue
    await eraseChainMember(profileId, deps)
    out.erased++
  }
  let todo = m.members
  for (;;) {
    const blocked: ChainMember[] = []
    for (const member of todo) if (!await putMember(member, deps, out)) blocked.push(member)
    if (blocked.length === 0) break
    if (blocked.length === todo.length) {
      for (const member of blocked) {
        const holder = await deps.users.byUsername(member.username)
        const whose = holder !== undefined && deps.ledger.members.has(holder.profile_id) ? 'another chain member\'s' : 'a box-local member\'s'
        refuseMember(member, `its username is ${whose}`, deps, out)
      }
      break
    }
    todo = blocked
  }
  return out
}

async function eraseChainMember (profileId: string, deps: ApplyDeps): Promise<void> {
  const user = await deps.users.get(profileId)
  const forget = async (): Promise<undefined> => {
    if (deps.ledger.members.has(profileId)) await deps.ledger.forget(profileId)
    return undefined
  }
  if (user === undefined) {
    // Gone already (a crash between an erasure and its ledger entry): the entry goes, and a rewrite takes its bytes.
    await forget()
    await rewriteAfterNotice(deps.erase.store)
    return
  }
  // The ledger's entry goes among the hooks, before the erasure rewrites the store.
  await eraseMember(deps.erase, user, [...(deps.erase.erasureHooks ?? []), forget])
  deps.log.info({ profile_id: profileId }, 'chain member erased (erased at the hub)')
}

/** Creates or updates one member and their pairings; false when their username is taken (another round may free it). */
async function putMember (member: ChainMember, deps: ApplyDeps, out: RevisionOutcome): Promise<boolean> {
  const profileId = member.profile_id
  const known = deps.ledger.members.has(profileId)
  const existing = await deps.users.get(profileId)
  if (existing !== undefined && !known) { refuseMember(member, 'its profile id is a box-local member\'s', deps, out); return true }
  const holder = await deps.users.byUsername(member.username)
  if (holder !== undefined && holder.profile_id !== profileId) return false
  if (existing === undefined || !sameAccount(existing, member)) {
    if (!known) await deps.ledger.remember(profileId, [])
    try {
      await deps.users.putChainMember(imported(member))
    } catch (err) {
      if (!(err instanceof UserExistsError)) throw err
      // Taken by a member created at the box meanwhile.
      if (!known) await deps.ledger.forget(profileId)
      return false
    }
    if (existing === undefined) out.created++
    else out.updated++
  }
  await pairDevices(member, deps, out)
  return true
}

async function pairDevices (member: ChainMember, deps: ApplyDeps, out: RevisionOutcome): Promise<void> {
  const profileId = member.profile_id
  const before = deps.ledger.members.get(profileId) ?? new Set<string>()
  const wanted = new Map(member.devices.map(d => [normalizeDeviceId(d.device_id), d]))
  const named = new Set([...before, ...wanted.keys()])
  if (named.size !== before.size) await deps.ledger.remember(profileId, named)
  for (const id of before) {
    if (wanted.has(id)) continue
    if (deps.devices.get(id)?.profile_id === profileId && await deps.devices.remove(id) !== undefined) out.unpaired++
  }
  const paired = new Set<string>()
  for (const [id, d] of wanted) {
    const current = deps.devices.get(id)
    if (current !== undefined && current.profile_id !== profileId) {
      if (!deps.ledger.members.has(current.profile_id)) { refuseDevice(member, id, 'it is paired to a box-local member', deps, out); continue }
      // Moved at the hub from another chain member.
      await deps.devices.remove(id)
    }
    try {
      const now = deps.devices.get(id)
      const record = await deps.devices.putChainDevice({ ...d, device_id: id, profile_id: profileId })
      if (record !== now) out.paired++
      paired.add(id)
    } catch (err) {
      if (!(err instanceof DeviceExistsError || err instanceof InvalidDeviceIdError || err instanceof InvalidAntDeviceIdError)) throw err
      refuseDevice(member, id, err.message, deps, out)
    }
  }
  if (paired.size !== named.size) await deps.ledger.remember(profileId, paired)
}

function imported (m: ChainMember): ImportedUser {
  const { devices: _devices, ...account } = m
  return account
}

/** Whether the box's record already holds the hub's account fields. */
function sameAccount (u: UserRecord, m: ChainMember): boolean {
  return u.username === m.username && u.password_hash === m.password_hash && u.created_at === m.created_at &&
    u.display_name === m.display_name && u.age === m.age && u.weight_kg === m.weight_kg && u.sex === m.sex && u.max_heart_rate === m.max_heart_rate
}

function refuseMember (member: ChainMember, reason: string, deps: ApplyDeps, out: RevisionOutcome): void {
  out.refused_members++
  deps.log.warn({ profile_id: member.profile_id, reason }, 'chain member refused')
}

function refuseDevice (member: ChainMember, deviceId: string, reason: string, deps: ApplyDeps, out: RevisionOutcome): void {
  out.refused_devices++
  deps.log.warn({ profile_id: member.profile_id, device_id: deviceId, reason }, 'chain device refused')
}
