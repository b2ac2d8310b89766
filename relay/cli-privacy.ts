// `hr-relay admin user consent <username> [--version V] | --withdraw`, `user export <username> --out FILE` and
// `user delete <username>`, over the admin API (api/http/admin-privacy.ts): a consent the member gave on paper,
// recorded by the operator; the member's data export; the member's erasure.
import { CliError, type AdminCommand } from './cli-admin.ts'

const seg = (s: string): string => encodeURIComponent(s)

function consentLine (r: { username?: string, consent?: { version: string, given_at: number, how: string } | null }): string {
  const c = r.consent
  return c == null
    ? `${String(r.username)}: no consent in force`
    : `${String(r.username)}: consent to notice version ${c.version}, ${c.how === 'operator' ? 'recorded by operator' : 'given on /me'} at ${new Date(c.given_at).toISOString()}`
}

export const PRIVACY_COMMANDS: AdminCommand[] = [
  {
    words: ['user', 'consent'],
    usage: 'user consent <username> [--version V] | --withdraw',
    args: ['username'],
    options: { version: { type: 'string' }, withdraw: { type: 'boolean' } },
    request: ([username], f) => {
      if (f.withdraw === true) {
        if (f.version !== undefined) throw new CliError('--withdraw takes no --version', 2)
        return { method: 'DELETE', path: `/admin/users/${seg(username!)}/consent` }
      }
      return { method: 'PUT', path: `/admin/users/${seg(username!)}/consent`, body: typeof f.version === 'string' ? { version: f.version } : {} }
    },
    human: consentLine
  },
  {
    words: ['user', 'export'],
    usage: 'user export <username> --out FILE',
    args: ['username'],
    options: { out: { type: 'string' } },
    request: ([username], f) => {
      if (typeof f.out !== 'string' || f.out === '') throw new CliError('--out FILE is required (the ZIP to write)', 2)
      return { method: 'GET', path: `/admin/users/${seg(username!)}/export`, saveTo: f.out }
    },
    human: (r: { file: string, bytes: number }) => `wrote ${r.file} (${r.bytes} bytes): profile.json, readings.csv, sessions/, classes.json, configuration.json, consents.json, apps.json`
  },
  {
    words: ['user', 'delete'],
    usage: 'user delete <username>',
    args: ['username'],
    request: ([username]) => ({ method: 'DELETE', path: `/admin/users/${seg(username!)}` }),
    human: (r: { username: string, erased: Record<string, number> }) => {
      const parts = Object.entries(r.erased).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k.replace(/_/g, ' ')}`)
      return `erased ${r.username}: ${parts.length === 0 ? 'nothing was stored' : parts.join(', ')}`
    }
  },
  {
    words: ['audit', 'list'],
    usage: 'audit list [--since T] [--limit N]',
    args: [],
    options: { since: { type: 'string' }, limit: { type: 'string' } },
    request: (_args, f) => {
      const q = new URLSearchParams()
      if (typeof f.since === 'string') q.set('since', f.since)
      if (typeof f.limit === 'string') q.set('limit', f.limit)
      const qs = q.toString()
      return { method: 'GET', path: `/admin/audit${qs === '' ? '' : `?${qs}`}` }
    },
    human: (r: { entries: AuditLine[] }) => r.entries.length === 0
      ? 'no entries'
      : r.entries.map(e => [new Date(e.at).toISOString(), e.actor, e.action, `${e.object.kind}${e.object.id === null ? '' : ` ${e.object.id}`}`, e.ip, `${e.result} ${e.status}`].join('\t')).join('\n')
  },
  {
    words: ['operator', 'add'],
    usage: 'operator add <name> --role owner|coach --password P',
    args: ['name'],
    options: { role: { type: 'string' }, password: { type: 'string' } },
    request: ([name], f) => {
      if (f.role !== 'owner' && f.role !== 'coach') throw new CliError('--role owner|coach is required', 2)
      if (typeof f.password !== 'string') throw new CliError('--password P is required (10 characters or more)', 2)
      return { method: 'POST', path: '/admin/operators', body: { name, role: f.role, password: f.password } }
    },
    human: (r: { name: string, role: string }) => `operator ${r.name} added (${r.role}); they sign in at /operator/signin`
  },
  {
    words: ['operator', 'list'],
    usage: 'operator list',
    args: [],
    request: () => ({ method: 'GET', path: '/admin/operators' }),
    human: (r: { operators: Array<{ name: string, role: string, created_at: number }> }) => r.operators.length === 0 ? 'no operator accounts' : r.operators.map(o => `${o.name}\t${o.role}\t${new Date(o.created_at).toISOString()}`).join('\n')
  },
  {
    words: ['operator', 'remove'],
    usage: 'operator remove <name>',
    args: ['name'],
    request: ([name]) => ({ method: 'DELETE', path: `/admin/operators/${seg(name!)}` }),
    human: (r: { name: string }) => `operator ${r.name} removed`
  }
]

interface AuditLine { at: number, actor: string, action: string, object: { kind: string, id: string | null }, ip: string, result: string, status: number }
