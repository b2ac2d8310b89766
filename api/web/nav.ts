// The navigation bars of the member and operator pages.
import { hidden } from './html.ts'

export const MEMBER_NAV: Array<[string, string]> = [
  ['/me', 'Today'], ['/me/widgets', 'Widgets'], ['/me/game-mod', 'Game mod'],
  ['/account/apps', 'Connected apps'], ['/account/tokens', 'Manual tokens']
]

export function memberNav (csrf: string, current: string): { nav: Array<[string, string]>, current: string, navExtra: string } {
  return { nav: MEMBER_NAV, current, navExtra: `<form method="post" action="/signout">${hidden('csrf', csrf)}<button type="submit" class="secondary">Sign out</button></form>` }
}

export const OPERATOR_NAV: Array<[string, string]> = [
  ['/operator', 'Overview'], ['/operator/users', 'Users'], ['/operator/clients', 'Clients'],
  ['/operator/rooms', 'Rooms'], ['/operator/coach', 'Coach'], ['/operator/devices', 'Devices'], ['/operator/operators', 'Operators'], ['/operator/audit', 'Audit log']
]

export function operatorNav (csrf: string, current: string): { nav: Array<[string, string]>, current: string, navExtra: string } {
  return { nav: OPERATOR_NAV, current, navExtra: `<form method="post" action="/operator/signout">${hidden('csrf', csrf)}<button type="submit" class="secondary">Sign out</button></form>` }
}
