// `hr-relay admin device ...`: pair devices (BLE straps, serial devices, MQTT
// devices, ANT+ straps) with users over the admin API (api/http/admin-devices.ts).
import { CliError, type AdminCommand } from './cli-admin.ts'

const KINDS = ['ble', 'serial', 'mqtt', 'ant', 'any']
const seg = (s: string): string => encodeURIComponent(s)

function stateText (s: any): string {
  if (s === null || s === undefined) return 'not seen'
  const parts = [s.connected === true ? 'connected' : 'not connected', `via ${String(s.source)}`]
  if (typeof s.battery_percent === 'number') parts.push(`battery ${s.battery_percent}%`)
  if (s.last_reading !== undefined) parts.push(`last ${s.last_reading.heart_rate} bpm at ${new Date(s.last_reading.measured_at).toISOString()}`)
  return parts.join(', ')
}

function checkKind (kind: unknown): void {
  if (kind !== undefined && !KINDS.includes(String(kind))) throw new CliError(`--kind must be one of ${KINDS.join(', ')}`, 2)
}

function pairedText (r: any): string {
  return r.mqtt_password === null
    ? `paired ${String(r.device_id)} (${String(r.kind)}) with profile ${String(r.profile_id)}`
    : [
        `paired ${String(r.device_id)} (${String(r.kind)}) with profile ${String(r.profile_id)}`,
        `mqtt_username: ${String(r.mqtt_username)}`,
        `mqtt_password: ${String(r.mqtt_password)}`,
        '(the password is shown only now; hr-relay keeps only a hash)'
      ].join('\n')
}

export const DEVICE_COMMANDS: AdminCommand[] = [
  {
    words: ['device', 'add'],
    usage: 'device add <device_id> --user <username> [--kind ble|serial|mqtt|ant|any] [--name N]',
    args: ['device_id'],
    options: { user: { type: 'string' }, kind: { type: 'string' }, name: { type: 'string' } },
    request: ([deviceId], f) => {
      if (typeof f.user !== 'string') throw new CliError('--user is required', 2)
      checkKind(f.kind)
      return { method: 'POST', path: '/admin/devices', body: { device_id: deviceId, username: f.user, kind: f.kind, name: f.name } }
    },
    human: pairedText
  },
  {
    // The same pairing, named from the member's side: `device pair ann --kind ant --device-id ant:12345`.
    words: ['device', 'pair'],
    usage: 'device pair <username> --kind ble|serial|mqtt|ant|any --device-id <device_id> [--name N]',
    args: ['username'],
    options: { 'device-id': { type: 'string' }, kind: { type: 'string' }, name: { type: 'string' } },
    request: ([username], f) => {
      if (typeof f['device-id'] !== 'string') throw new CliError('--device-id is required', 2)
      if (f.kind === undefined) throw new CliError(`--kind is required (${KINDS.join(', ')})`, 2)
      checkKind(f.kind)
      return { method: 'POST', path: '/admin/devices', body: { device_id: f['device-id'], username, kind: f.kind, name: f.name } }
    },
    human: pairedText
  },
  {
    words: ['device', 'list'],
    usage: 'device list',
    args: [],
    request: () => ({ method: 'GET', path: '/admin/devices' }),
    human: r => (r.devices as any[]).map(d => `${d.device_id}\t${d.kind}\t${d.username ?? d.profile_id}\t${d.name ?? ''}\t${stateText(d.state)}`).join('\n') || '(no paired devices)'
  },
  {
    words: ['device', 'remove'],
    usage: 'device remove <device_id>',
    args: ['device_id'],
    request: ([deviceId]) => ({ method: 'DELETE', path: `/admin/devices/${seg(deviceId!)}` })
  },
  {
    words: ['device', 'unpaired'],
    usage: 'device unpaired',
    args: [],
    request: () => ({ method: 'GET', path: '/admin/devices/unpaired' }),
    human: r => (r.devices as any[]).map(d => `${d.device_id}\t${d.name ?? ''}\t${stateText(d)}`).join('\n') || '(no unpaired devices seen)'
  },
  {
    // Hold a strap at the box: it is listed first, marked "nearest" when it is clearly the closest (docs/operator.md "The front desk").
    words: ['device', 'nearby'],
    usage: 'device nearby',
    args: [],
    request: () => ({ method: 'GET', path: '/admin/devices/nearby' }),
    human: r => (r.devices as any[]).map(d => `${d.nearest === true ? '* nearest' : '         '}\t${d.device_id}\t${typeof d.rssi === 'number' ? `${d.rssi} dBm` : 'signal unknown'}\t${d.name ?? ''}\t${stateText(d)}`).join('\n') || '(no unpaired devices seen)'
  }
]
