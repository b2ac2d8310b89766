// A member's data export (GDPR Article 20): one ZIP, written as a stream (fflate), with
//   profile.json        the account as the API knows it, without the password hash
//   readings.csv        every raw reading kept: measured_at, heart_rate, rr_intervals_ms (';'-separated), source,
//                       device_id (empty: the store does not keep the device per reading; the pairings are in
//                       profile.json)
//   sessions/<id>.fit   each training session as a FIT activity file (the same file the session export gives)
//   classes.json        the member's class summaries and the maxima their classes raised (api/classes/types.ts)
//   configuration.json  widgets, game-mod and rich-presence configuration
//   consents.json       every consent to the privacy notice, withdrawn ones included
//   apps.json           apps with access: client id, name, scopes, when their newest token was issued
// docs/operator.md "Privacy and security for gyms".
import { Zip, ZipDeflate, ZipPassThrough } from 'fflate'
import { publicUser } from '../store/users.ts'
import { RichPresence } from '../store/rich-presence.ts'
import { listSessions, loadSession } from '../session-reads.ts'
import { summarise } from '../sessions.ts'
import { sessionFit } from './fit.ts'
import { optionsFor } from '../http/sessions.ts'
import type { Services } from '../services.ts'

export type MemberExportUses = Pick<Services, 'users' | 'readings' | 'widgets' | 'gameMod' | 'tokens' | 'clients' | 'devices' | 'config' | 'store' | 'classStore'>

/** What an export holds, counted by kind (the CLI prints it). */
export interface ExportCounts { readings: number, sessions: number, classes: number, widgets: number, consents: number, apps: number }

/** Readings read per batch while writing readings.csv. */
const PAGE = 5000

const csvRow = (fields: Array<string | number>): string => fields.join(',') + '\n'

/**
 * Writes the member's export as a ZIP to `write` (called with each chunk in order; awaited, so a slow
 * destination holds the reading back). Resolves with the counts once the last chunk was written.
 */
export async function writeMemberExport (uses: MemberExportUses, profileId: string, write: (chunk: Uint8Array) => Promise<void>): Promise<ExportCounts> {
  const user = await uses.users.get(profileId)
  if (user === undefined) throw new Error(`no profile ${profileId}`)
  // fflate hands chunks to a synchronous callback: they are queued and written in order.
  let failed: Error | undefined
  let tail: Promise<void> = Promise.resolve()
  let ended!: () => void
  const done = new Promise<void>(resolve => { ended = resolve })
  const zip = new Zip((err, chunk, final) => {
    if (err !== null) { failed = err; ended(); return }
    tail = tail.then(async () => { await write(chunk) })
    tail.catch((e: unknown) => { failed = e as Error })
    if (final) ended()
  })
  const text = new TextEncoder()
  const addFile = (name: string, body: string | Uint8Array, compress = true): void => {
    const f = compress ? new ZipDeflate(name, { level: 6 }) : new ZipPassThrough(name)
    zip.add(f)
    f.push(typeof body === 'string' ? text.encode(body) : body, true)
  }

  const devices = (await uses.devices.list()).filter(d => d.profile_id === profileId).map(d => ({ device_id: d.device_id, kind: d.kind }))
  addFile('profile.json', JSON.stringify({ ...publicUser(user), consents: undefined, devices }, null, 2) + '\n')

  // readings.csv, page by page.
  const csv = new ZipDeflate('readings.csv', { level: 6 })
  zip.add(csv)
  csv.push(text.encode(csvRow(['measured_at', 'heart_rate', 'rr_intervals_ms', 'source', 'device_id'])))
  let readings = 0
  let cursor = 0
  for (;;) {
    const rows = await uses.readings.page(profileId, cursor, Number.MAX_SAFE_INTEGER, PAGE)
    if (rows.length === 0) break
    let chunk = ''
    for (const r of rows) chunk += csvRow([r.measured_at, r.heart_rate, (r.rr_intervals_ms ?? []).join(';'), r.source, ''])
    readings += rows.length
    csv.push(text.encode(chunk))
    await tail
    if (failed !== undefined) throw failed
    cursor = (rows[rows.length - 1]?.measured_at ?? cursor) + 1
    if (rows.length < PAGE) break
  }
  csv.push(new Uint8Array(0), true)

  // sessions/, one FIT file each (already compressed enough: stored as is).
  const o = await optionsFor(uses, profileId)
  const sessions = await listSessions(uses.readings, profileId, 0, Date.now() + 1, o)
  for (const s of sessions) {
    const rows = await loadSession(uses.readings, profileId, s.id, o.sessionGapMs)
    if (rows === undefined) continue
    addFile(`sessions/${s.id}.fit`, await sessionFit(summarise(rows, o), rows), false)
    await tail
  }

  const classes = await uses.classStore.summariesOf(profileId)
  addFile('classes.json', JSON.stringify({ classes, learned_max_heart_rate: await uses.classStore.learnedOf(profileId) }, null, 2) + '\n')

  const widgets = await uses.widgets.list(profileId)
  addFile('configuration.json', JSON.stringify({
    widgets,
    game_mod: (await uses.gameMod.get(profileId)) ?? null,
    rich_presence: await new RichPresence(uses.store).get(profileId)
  }, null, 2) + '\n')
  const consents = user.consents ?? []
  addFile('consents.json', JSON.stringify(consents, null, 2) + '\n')
  const apps = []
  for (const g of await uses.tokens.grantsOf(profileId)) apps.push({ ...g, name: (await uses.clients.get(g.client_id))?.name ?? null })
  addFile('apps.json', JSON.stringify(apps, null, 2) + '\n')

  zip.end()
  await done
  await tail
  if (failed !== undefined) throw failed
  return { readings, sessions: sessions.length, classes: classes.length, widgets: widgets.length, consents: consents.length, apps: apps.length }
}
