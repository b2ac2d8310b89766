// Sends a member's data export (member-export.ts) as an HTTP download: the admin API and /me.
import { PassThrough } from 'node:stream'
import type { FastifyReply } from 'fastify'
import type { UserRecord } from '../store/users.ts'
import type { MemberExportUses } from './member-export.ts'

export type { MemberExportUses }

export async function sendMemberExport (uses: MemberExportUses, reply: FastifyReply, user: UserRecord): Promise<FastifyReply> {
  // Loaded on the first export: the ZIP writer (fflate) and the FIT encoder are not needed at start.
  const { writeMemberExport } = await import('./member-export.ts')
  const body = new PassThrough()
  // Each chunk waits for the socket: a slow download holds the store reads back instead of filling memory.
  const writing = writeMemberExport(uses, user.profile_id, async chunk => {
    if (!body.write(chunk)) await new Promise<void>(resolve => { body.once('drain', resolve); body.once('close', resolve) })
    if (body.destroyed) throw new Error('the download was closed')
  })
  writing.then(() => { body.end() }, (err: unknown) => {
    reply.log.error({ err, profile_id: user.profile_id }, 'data export failed')
    // The client sees a cut connection, never a ZIP that looks whole.
    body.destroy(err as Error)
  })
  const day = new Date().toISOString().slice(0, 10)
  return await reply
    .header('content-type', 'application/zip')
    .header('content-disposition', `attachment; filename="hr-relay-export-${user.username.replace(/[^A-Za-z0-9_.-]/g, '_')}-${day}.zip"`)
    .header('cache-control', 'no-store')
    .send(body)
}
