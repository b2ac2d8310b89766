// `hr-relay admin room class ...`: start and end a room's class, sent to the
// running server's admin API (api/http/admin-classes.ts). <room_id> is the
// room id, as in the other room commands; --json prints the class record.
import { CliError, type AdminCommand } from './cli-admin.ts'

const seg = (s: string): string => encodeURIComponent(s)
const iso = (ms: unknown): string => typeof ms === 'number' ? new Date(ms).toISOString() : '-'

/** The class record, one `key: value` a line. */
function human (r: { class_id: string, name: string, room_id: string, started_at: number, planned_end: number, ended_at: number | null }): string {
  return [`class_id: ${r.class_id}`, `name: ${r.name}`, `room_id: ${r.room_id}`, `started_at: ${iso(r.started_at)}`, `planned_end: ${iso(r.planned_end)}`, ...(r.ended_at === null ? [] : [`ended_at: ${iso(r.ended_at)}`])].join('\n')
}

export const CLASS_COMMANDS: AdminCommand[] = [
  {
    words: ['room', 'class', 'start'],
    usage: 'room class start <room_id> [--name "Spin 18:00"] [--minutes 45]',
    args: ['room_id'],
    options: { name: { type: 'string' }, minutes: { type: 'string' } },
    request: ([roomId], f) => {
      let minutes: number | undefined
      if (f.minutes !== undefined) {
        minutes = Number(f.minutes)
        if (!Number.isInteger(minutes) || minutes < 1) throw new CliError('--minutes must be a whole number of minutes, 1 or more', 2)
      }
      return { method: 'POST', path: `/admin/rooms/${seg(roomId!)}/class`, body: { ...(typeof f.name === 'string' ? { name: f.name } : {}), ...(minutes === undefined ? {} : { minutes }) } }
    },
    human
  },
  {
    words: ['room', 'class', 'end'],
    usage: 'room class end <room_id>',
    args: ['room_id'],
    request: ([roomId]) => ({ method: 'POST', path: `/admin/rooms/${seg(roomId!)}/class/end`, body: {} }),
    human
  }
]
