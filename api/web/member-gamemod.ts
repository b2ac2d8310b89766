// /me/game-mod: the game-mod configuration (spec 2.6) as a form. Every key is
// nullable: an empty field, or "not set" for yes/no keys, stores null. The
// write replaces the whole configuration, as the API's POST does (spec 4.5).
import type { FastifyInstance, FastifyReply } from 'fastify'
import { GAME_MOD_KEYS, GAME_MOD_TYPES, type GameModConfig } from '../store/gamemod.ts'
import { premiumActive, type UserRecord } from '../store/users.ts'
import type { FormParams } from '../oauth/form.ts'
import { esc, field, notice, postForm, sendPage } from './html.ts'
import { checkedForm, memberOf, one, type PageGuardUses } from './guard.ts'
import { memberNav } from './nav.ts'
import type { Services } from '../services.ts'

function label (key: string): string {
  return key.replaceAll('_', ' ').replace(/^./, c => c.toUpperCase()).replace('bpm', '(bpm)')
}

function input (key: keyof GameModConfig, value: unknown): string {
  const id = `gm-${key}`
  const type = GAME_MOD_TYPES[key]
  if (type === 'boolean') {
    const opt = (v: string, text: string, selected: boolean): string => `<option value="${v}"${selected ? ' selected' : ''}>${text}</option>`
    return field(id, label(key), `<select id="${id}" name="${key}">${opt('', 'not set', value === null || value === undefined)}${opt('true', 'yes', value === true)}${opt('false', 'no', value === false)}</select>`)
  }
  if (type === 'number') return field(id, label(key), `<input type="number" step="any" id="${id}" name="${key}" value="${esc(value ?? '')}">`)
  return field(id, label(key), `<input type="text" id="${id}" name="${key}" maxlength="100" value="${esc(value ?? '')}">`)
}

export type ParsedGameMod = { ok: true, config: Record<string, unknown> } | { ok: false, error: string }

export function parseGameModForm (form: FormParams): ParsedGameMod {
  const config: Record<string, unknown> = {}
  for (const key of GAME_MOD_KEYS) {
    const raw = one(form, key).trim()
    const type = GAME_MOD_TYPES[key]
    if (raw === '') { config[key] = null; continue }
    if (type === 'boolean') {
      if (raw !== 'true' && raw !== 'false') return { ok: false, error: `${label(key)}: choose yes, no or not set.` }
      config[key] = raw === 'true'
    } else if (type === 'number') {
      const n = Number(raw)
      if (!Number.isFinite(n)) return { ok: false, error: `${label(key)}: enter a number or leave it empty.` }
      config[key] = n
    } else {
      if (raw.length > 100) return { ok: false, error: `${label(key)}: at most 100 characters.` }
      config[key] = raw
    }
  }
  return { ok: true, config }
}

function featureEnabled (user: UserRecord): boolean {
  return premiumActive(user) || user.features.includes('game_mod')
}

/** What the game-mod page uses: the game-mod configuration store and the member guard. */
export type MemberGameModUses = PageGuardUses & Pick<Services, 'gameMod'>

export async function gameModRoutes (app: FastifyInstance, uses: MemberGameModUses): Promise<void> {
  const page = async (reply: FastifyReply, user: UserRecord, csrf: string, status: number, values: Record<string, unknown> | undefined, message?: string, error?: string): Promise<FastifyReply> => {
    const current = values ?? (await uses.gameMod.get(user.profile_id)) ?? {}
    const feature = featureEnabled(user)
      ? '<p>The game mod feature is enabled for your account.</p>'
      : '<p class="notice error">The game mod feature needs a paid plan or trial, or the operator can grant it. You can still save a configuration.</p>'
    const body = `${notice(message)}${notice(error, 'error')}${feature}
${postForm('/me/game-mod', csrf, `<fieldset><legend>Game-mod configuration</legend>${GAME_MOD_KEYS.map(k => input(k, (current as Record<string, unknown>)[k])).join('\n')}</fieldset><button type="submit">Save configuration</button>`)}`
    return await sendPage(reply, status, 'Game mod', body, memberNav(csrf, '/me/game-mod'))
  }

  app.get<{ Querystring: { done?: unknown } }>('/me/game-mod', async (request, reply) => {
    const who = await memberOf(uses, request, reply, '/me/game-mod')
    if (who === null) return reply
    const saved = request.query.done === 'saved'
    return await page(reply, who.user, who.session.csrf, 200, undefined, saved ? 'Configuration saved.' : undefined)
  })

  app.post('/me/game-mod', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const who = await memberOf(uses, request, reply, '/me/game-mod')
    if (who === null) return reply
    const parsed = parseGameModForm(checked.form)
    if (!parsed.ok) return await page(reply, who.user, who.session.csrf, 400, undefined, undefined, parsed.error)
    await uses.gameMod.set(who.user.profile_id, parsed.config)
    return await reply.redirect('/me/game-mod?done=saved', 303)
  })
}
