// The front desk's member actions, one function each, called both by the admin API (the CLI's
// `hr-relay admin user add|update|invite|list`) and by the operator pages (api/web/operator-members.ts), so that
// the two never disagree; and their admin routes:
//   PATCH /admin/users/:username             {display_name?, age?, weight_kg?, sex?, max_heart_rate?} (null clears) → the member
//   POST  /admin/users/:username/invitation  → 201 {username, invitation_url, expires_at}
// POST /admin/users (api/http/admin.ts) takes a password or `invite: true`, and GET /admin/users a `q` filter.
import { Type } from '@sinclair/typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { hashSecret, newSecret } from '../store/secrets.ts'
import { UserExistsError, publicUser, type NewUser, type UserRecord } from '../store/users.ts'
import { invitationState, parseInvitationToken, withInvitation, withProfile, type InvitationState, type ProfilePatch } from '../store/user-records.ts'
import { Nullable, Params } from './schema.ts'
import type { Services } from '../services.ts'

/** What the member actions use: the accounts, and the public URL the invitation links start with. */
export type MembersUses = Pick<Services, 'users' | 'config'>

/** A member's password: the bounds of POST /admin/users. */
export const PASSWORD_MIN = 8
export const PASSWORD_MAX = 1024

/** A new member: a password, or an invitation link the member opens to choose one (exactly one of the two). */
export type NewMember = Omit<NewUser, 'password'> & { password?: string, invite?: boolean }

/** An invitation link, shown once: only the digest of its secret is stored. */
export interface Invitation { invitation_url: string, expires_at: number }

function invitationUrl (uses: MembersUses, token: string): string {
  return `${uses.config.publicUrl.replace(/\/+$/, '')}/me/invitation/${token}`
}

/** Creates a member; with `invite`, the answer carries their invitation link. Throws ApiError (400 without a way in, 409 for a taken username). */
export async function addMember (uses: MembersUses, input: NewMember, now = Date.now()): Promise<{ user: UserRecord, invitation?: Invitation }> {
  const { password, invite, ...rest } = input
  if ((password === undefined) === (invite !== true)) throw new ApiError('invalid_request', { detail: 'give either a password or invite: true (an invitation link the member opens to choose a password)' })
  let user: UserRecord
  try {
    // An invited member's password is random and never shown: they get in only through the link.
    user = await uses.users.create({ ...rest, password: password ?? newSecret(32) }, now)
  } catch (err) {
    if (err instanceof UserExistsError) throw new ApiError('conflict', { detail: err.message })
    throw err
  }
  if (invite !== true) return { user }
  const invited = await inviteMember(uses, user.username, now)
  return { user: invited.user, invitation: invited.invitation }
}

/** The member of `username`, or ApiError 404. */
export async function memberNamed (uses: MembersUses, username: string): Promise<UserRecord> {
  const user = await uses.users.byUsername(username)
  if (user === undefined) throw new ApiError('not_found', { detail: `no user ${username}` })
  return user
}

/** A new invitation link for the member (the one before stops working). */
export async function inviteMember (uses: MembersUses, username: string, now = Date.now()): Promise<{ user: UserRecord, invitation: Invitation }> {
  const member = await memberNamed(uses, username)
  let token = ''
  const user = await uses.users.update(member.profile_id, u => { const made = withInvitation(u, now); token = made.token; return made.user })
  if (user === undefined || user.invitation === undefined) throw new ApiError('not_found', { detail: `no user ${username}` })
  return { user, invitation: { invitation_url: invitationUrl(uses, token), expires_at: user.invitation.expires_at } }
}

/** Sets (or clears, with null) the member's profile fields. */
export async function updateMember (uses: MembersUses, username: string, patch: ProfilePatch): Promise<UserRecord> {
  const member = await memberNamed(uses, username)
  const user = await uses.users.update(member.profile_id, u => withProfile(u, patch))
  if (user === undefined) throw new ApiError('not_found', { detail: `no user ${username}` })
  return user
}

/** What opening an invitation link finds: its member when it is usable. */
export async function openInvitation (uses: MembersUses, token: string, now = Date.now()): Promise<{ state: InvitationState, user?: UserRecord }> {
  const parsed = parseInvitationToken(token)
  if (parsed === undefined) return { state: 'unknown' }
  const user = await uses.users.get(parsed.profileId)
  const state = invitationState(user, parsed.secret, now)
  return state === 'valid' ? { state, user } : { state }
}

/**
 * The member behind a usable invitation chooses their password: it is set and the link is spent, in one write (two
 * submissions of the same link: the second finds it used). Answers the link's state; 'valid' means the password is set.
 */
export async function acceptInvitation (uses: MembersUses, token: string, password: string, now = Date.now()): Promise<{ state: InvitationState, user?: UserRecord }> {
  const opened = await openInvitation(uses, token, now)
  if (opened.user === undefined) return opened
  const parsed = parseInvitationToken(token)
  if (parsed === undefined) return { state: 'unknown' }
  const hash = await hashSecret(password)
  let state = 'unknown' as InvitationState
  const user = await uses.users.update(opened.user.profile_id, u => {
    // Checked again under the record's lock: the scrypt above yields the event loop.
    state = invitationState(u, parsed.secret, now)
    if (state !== 'valid' || u.invitation === undefined) return u
    u.password_hash = hash
    u.invitation.used_at = now
    return u
  })
  return state === 'valid' && user !== undefined ? { state, user } : { state }
}

/** The admin routes of the member actions (registered inside the admin API's scope, behind its token check). */
export function memberAdminRoutes (app: FastifyInstance, uses: MembersUses): void {
  const admin = app.withTypeProvider<TypeBoxTypeProvider>()
  admin.patch('/admin/users/:username', {
    schema: {
      params: Params({ username: Type.String() }),
      body: Type.Object({
        display_name: Type.Optional(Nullable('string', { maxLength: 100 })),
        age: Type.Optional(Nullable('integer', { minimum: 1, maximum: 130 })),
        weight_kg: Type.Optional(Nullable('number', { exclusiveMinimum: 0, maximum: 500 })),
        sex: Type.Optional(Type.Unsafe<'male' | 'female' | null>({ enum: ['male', 'female', null] })),
        max_heart_rate: Type.Optional(Nullable('integer', { minimum: 60, maximum: 260 }))
      }, { additionalProperties: false, minProperties: 1 })
    }
  }, async request => publicUser(await updateMember(uses, request.params.username, request.body)))

  admin.post('/admin/users/:username/invitation', {
    schema: { params: Params({ username: Type.String() }) }
  }, async (request, reply) => {
    const { user, invitation } = await inviteMember(uses, request.params.username)
    return await reply.code(201).header('cache-control', 'no-store').send({ username: user.username, ...invitation })
  })
}
