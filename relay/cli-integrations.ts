// `hr-relay admin integration add home-assistant` and
// `hr-relay admin user set <username> --home-assistant on|off`, over the admin
// API (api/http/admin-integrations.ts).
import { CliError, type AdminCommand } from './cli-admin.ts'

const seg = (s: string): string => encodeURIComponent(s)

export const INTEGRATION_COMMANDS: AdminCommand[] = [
  {
    words: ['integration', 'add'],
    usage: 'integration add home-assistant',
    args: ['name'],
    request: ([name]) => {
      if (name !== 'home-assistant') throw new CliError('the only integration is home-assistant', 2)
      return { method: 'POST', path: '/admin/integrations', body: { name } }
    },
    human: r => [
      `mqtt_username: ${String(r.mqtt_username)}`,
      `mqtt_password: ${String(r.mqtt_password)}`,
      '(the password is shown only now; hr-relay keeps only a hash; adding again replaces it)'
    ].join('\n')
  },
  {
    words: ['user', 'set'],
    usage: 'user set <username> --home-assistant on|off',
    args: ['username'],
    options: { 'home-assistant': { type: 'string' } },
    request: ([username], f) => {
      const v = f['home-assistant']
      if (v !== 'on' && v !== 'off') throw new CliError('--home-assistant on|off is required', 2)
      return { method: 'PUT', path: `/admin/users/${seg(username!)}/home-assistant`, body: { enabled: v === 'on' } }
    }
  }
]
