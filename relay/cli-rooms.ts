// `hr-relay admin room ...`: the operator's room commands, sent to the
// running server's admin API (api/http/admin-rooms.ts).
import { CliError, type AdminCommand } from './cli-admin.ts'

const seg = (s: string): string => encodeURIComponent(s)
const int = (v: unknown, name: string): number | undefined => {
  if (v === undefined) return undefined
  const n = Number(v)
  if (!Number.isInteger(n)) throw new CliError(`--${name} must be an integer`, 2)
  return n
}

interface RoomView { room_id: string, name: string, display_id: string, members: Array<{ username: string | null, display_name: string }> }

export const ROOM_COMMANDS: AdminCommand[] = [
  {
    words: ['room', 'add'],
    usage: 'room add <name>',
    args: ['name'],
    request: ([name]) => ({ method: 'POST', path: '/admin/rooms', body: { name } }),
    human: r => `room_id: ${r.room_id}\ndisplay_id: ${r.display_id}`
  },
  {
    words: ['room', 'list'],
    usage: 'room list',
    args: [],
    request: () => ({ method: 'GET', path: '/admin/rooms' }),
    human: r => (r.rooms as RoomView[]).map(x => `${x.room_id}\t${x.name}\tmembers=${x.members.map(m => m.username ?? '?').join(',')}`).join('\n') || '(no rooms)'
  },
  {
    words: ['room', 'update'],
    usage: 'room update <room_id> --name <name>',
    args: ['room_id'],
    options: { name: { type: 'string' } },
    request: ([roomId], f) => {
      if (typeof f.name !== 'string') throw new CliError('--name is required', 2)
      return { method: 'PATCH', path: `/admin/rooms/${seg(roomId!)}`, body: { name: f.name } }
    },
    human: r => `room_id: ${r.room_id}\nname: ${r.name}`
  },
  {
    words: ['room', 'member', 'add'],
    usage: 'room member add <room_id> <username> [--display-name N] [--max-heart-rate N]',
    args: ['room_id', 'username'],
    options: { 'display-name': { type: 'string' }, 'max-heart-rate': { type: 'string' } },
    request: ([roomId, username], f) => ({
      method: 'POST',
      path: `/admin/rooms/${seg(roomId!)}/members`,
      body: { username, display_name: f['display-name'], max_heart_rate: int(f['max-heart-rate'], 'max-heart-rate') }
    }),
    human: r => `added ${r.member.username} to room ${r.room_id}`
  },
  {
    words: ['room', 'member', 'remove'],
    usage: 'room member remove <room_id> <username>',
    args: ['room_id', 'username'],
    request: ([roomId, username]) => ({ method: 'DELETE', path: `/admin/rooms/${seg(roomId!)}/members/${seg(username!)}` }),
    human: r => `removed ${r.profile_id} from room ${r.room_id}`
  },
  {
    words: ['room', 'display', 'rotate'],
    usage: 'room display rotate <room_id>   (revokes the display link and issues a new display_id)',
    args: ['room_id'],
    request: ([roomId]) => ({ method: 'POST', path: `/admin/rooms/${seg(roomId!)}/display` }),
    human: r => `display_id: ${r.display_id}`
  }
]
