// What the OpenAPI document says about each route beyond its schema: the tag
// (feature) it is listed under, a one-line summary, and who may call it. Kept
// here, by method and path, rather than in every route file, so that the
// document is written in one place; test/api/http/openapi.test.ts checks that
// every route on the server is either listed in the document or hidden here
// with its reason, and that each scope below is the one the route asks for.
import { ALL_SCOPES, type Scope } from '../scopes.ts'

export const TAGS = [
  { name: 'Heart rate', description: 'Write readings, read the latest, the history and sessions, stream them live, pause ingestion.' },
  { name: 'Statistics', description: 'Summaries of a member\'s heart rate over a time range.' },
  { name: 'Widgets', description: 'Overlay widgets: their configuration and the public stream an overlay reads.' },
  { name: 'Profile', description: 'The signed-in member\'s profile.' },
  { name: 'Game mod', description: 'The configuration a game mod reads.' },
  { name: 'Rich presence', description: 'Chat-app rich presence configuration (a premium feature).' },
  { name: 'Feature flags', description: 'Whether a feature is on for the member.' },
  { name: 'Rooms', description: 'Rooms: live streams of every member of a room, for members and for displays.' },
  { name: 'OAuth', description: 'OAuth 2.0: authorization, tokens, device authorization, revocation, validation.' },
  { name: 'Admin', description: 'The operator\'s API (admin token; loopback only unless http.admin_remote is on).' },
  { name: 'Pages', description: 'Web pages an app links to: the overlay of a widget and the display of a room.' },
  { name: 'Service', description: 'Health, metrics, and MQTT over WebSocket for devices.' }
] as const

export type Tag = typeof TAGS[number]['name']

/** Who may call an operation: a member's token with a scope (also as `access_token` in the query), any valid token, the admin token, an OAuth client, or anyone. */
export type Access = { scope: Scope | null, query?: true } | 'token' | 'admin' | 'client' | 'public'

export interface Operation { tag: Tag, summary: string, access: Access }

const user = (scope: Scope | null, query = false): Access => query ? { scope, query: true } : { scope }

/** Keyed by `METHOD path`, the path in OpenAPI's form (`{param}` for Fastify's `:param`). */
export const OPERATIONS: Readonly<Record<string, Operation>> = {
  'GET /health': { tag: 'Service', summary: 'Health of the service and its sources', access: 'public' },
  'GET /metrics': { tag: 'Service', summary: 'Prometheus metrics', access: 'public' },
  'GET /mqtt': { tag: 'Service', summary: 'MQTT over WebSocket (path: mqtt.websocket_path); devices sign in with MQTT credentials', access: 'public' },

  'POST /api/v1/data': { tag: 'Heart rate', summary: 'Write a reading', access: user('data:heart_rate:write', true) },
  'GET /api/v1/data/heart_rate/latest': { tag: 'Heart rate', summary: 'The latest reading', access: user('data:heart_rate:read') },
  'GET /api/v1/data/heart_rate/history': { tag: 'Heart rate', summary: 'Readings in a time range', access: user('data:heart_rate:read') },
  'GET /api/v1/data/sessions': { tag: 'Heart rate', summary: 'Training sessions', access: user('data:heart_rate:read') },
  'GET /api/v1/data/sessions/{id}/export': { tag: 'Heart rate', summary: 'Export a session (FIT, TCX, GPX or CSV)', access: user('data:heart_rate:read') },
  'GET /api/v1/classes': { tag: 'Heart rate', summary: 'The member\'s classes with their summaries (hr-relay extension)', access: user('data:heart_rate:read') },
  'GET /api/v1/classes/{class_id}/export': { tag: 'Heart rate', summary: 'Export a class of the member (CSV, TCX or FIT; hr-relay extension)', access: user('data:heart_rate:read') },
  'GET /api/v1/data/real_time': { tag: 'Heart rate', summary: 'Live readings (WebSocket)', access: user('data:heart_rate:read', true) },
  'GET /api/v1/data/ingestion_pause': { tag: 'Heart rate', summary: 'Whether ingestion is paused', access: user('data:ingestion_pause:read') },
  'POST /api/v1/data/ingestion_pause': { tag: 'Heart rate', summary: 'Pause or resume ingestion', access: user('data:ingestion_pause:write') },
  'GET /api/v1/statistics': { tag: 'Statistics', summary: 'Heart-rate statistics over a time range', access: user('data:statistics:read') },
  'POST /api/v1/widgets': { tag: 'Widgets', summary: 'Create a widget', access: user('widgets:update') },
  'GET /api/v1/widgets': { tag: 'Widgets', summary: 'List the member\'s widgets', access: user('widgets:read') },
  'POST /api/v1/widgets/{widget_id}': { tag: 'Widgets', summary: 'Change a widget', access: user('widgets:update') },
  'DELETE /api/v1/widgets/{widget_id}': { tag: 'Widgets', summary: 'Delete a widget', access: user('widgets:update') },
  'GET /widgets/{widget_id}/stream': { tag: 'Widgets', summary: 'Live readings of a widget\'s owner (WebSocket; the widget id is the secret)', access: 'public' },
  'GET /widgets/{widget_id}/view': { tag: 'Pages', summary: 'The overlay page of a widget (HTML, for OBS browser sources)', access: 'public' },
  'GET /api/v1/profile': { tag: 'Profile', summary: 'The member\'s profile', access: user('profile:read') },
  'GET /api/v1/game-mod/configuration': { tag: 'Game mod', summary: 'Read the game-mod configuration', access: user('game_mod:configuration:read') },
  'POST /api/v1/game-mod/configuration': { tag: 'Game mod', summary: 'Replace the game-mod configuration', access: user('game_mod:configuration:write') },
  'GET /api/v1/chatapp/rich_presence/configuration': { tag: 'Rich presence', summary: 'Read the rich presence configuration', access: user('chatapp:rich_presence:config:read') },
  'POST /api/v1/chatapp/rich_presence/configuration': { tag: 'Rich presence', summary: 'Replace the rich presence configuration', access: user('chatapp:rich_presence:config:write') },
  'GET /api/v1/features/{feature_id}': { tag: 'Feature flags', summary: 'Whether a feature is on for the member', access: user(null) },
  'GET /api/v2/data/rooms/{room_id}/real_time': { tag: 'Rooms', summary: 'Live readings of a room\'s members (WebSocket, members only)', access: user('data:room:read', true) },
  'GET /rooms/{room_id}/stream': { tag: 'Rooms', summary: 'Live readings of a room for a display (WebSocket; needs the display_id)', access: 'public' },
  'GET /rooms/{room_id}/display': { tag: 'Pages', summary: 'The display page of a room (HTML; needs the display_id)', access: 'public' },
  'GET /rooms/{room_id}/display/state': { tag: 'Rooms', summary: 'The state a room display starts from (needs the display_id)', access: 'public' },

  'GET /oauth2/authorize': { tag: 'OAuth', summary: 'Authorization endpoint (authorization code with PKCE, or implicit): the member signs in and consents in the browser', access: 'public' },
  'POST /oauth2/token': { tag: 'OAuth', summary: 'Token endpoint: authorization_code, refresh_token, client_credentials and the device_code grant', access: 'client' },
  'POST /oauth2/device_authorization': { tag: 'OAuth', summary: 'Start a device authorization (RFC 8628)', access: 'client' },
  'POST /oauth2/revoke': { tag: 'OAuth', summary: 'Revoke a token (RFC 7009)', access: 'client' },
  'GET /api/v1/token/validate': { tag: 'OAuth', summary: 'What a token is: its client, profile, scopes and expiry', access: 'token' },

  'POST /admin/users': { tag: 'Admin', summary: 'Create a member', access: 'admin' },
  'GET /admin/users': { tag: 'Admin', summary: 'List the members (q: only those whose username or display name contains it)', access: 'admin' },
  'PATCH /admin/users/{username}': { tag: 'Admin', summary: 'Change a member\'s profile fields (null clears one)', access: 'admin' },
  'POST /admin/users/{username}/invitation': { tag: 'Admin', summary: 'A new invitation link for a member to choose their password (shown once; the one before stops working)', access: 'admin' },
  'POST /admin/users/{username}/features': { tag: 'Admin', summary: 'Grant a member a feature', access: 'admin' },
  'DELETE /admin/users/{username}/clients/{client_id}': { tag: 'Admin', summary: 'Disconnect an app from a member', access: 'admin' },
  'PUT /admin/users/{username}/home-assistant': { tag: 'Admin', summary: 'Opt a member in or out of Home Assistant', access: 'admin' },
  'PUT /admin/users/{username}/consent': { tag: 'Admin', summary: 'Record a member\'s consent to the privacy notice (a paper form)', access: 'admin' },
  'DELETE /admin/users/{username}/consent': { tag: 'Admin', summary: 'Withdraw a member\'s consent', access: 'admin' },
  'POST /admin/operators': { tag: 'Admin', summary: 'Add an operator account (owner or coach) for the operator pages', access: 'admin' },
  'GET /admin/operators': { tag: 'Admin', summary: 'List the operator accounts', access: 'admin' },
  'DELETE /admin/operators/{name}': { tag: 'Admin', summary: 'Remove an operator account (not the last owner)', access: 'admin' },
  'GET /admin/audit': { tag: 'Admin', summary: 'The audit log: every change made through the admin API and the operator pages, newest first (read-only)', access: 'admin' },
  'DELETE /admin/users/{username}': { tag: 'Admin', summary: 'Erase a member: every trace, then the bytes (answers what went, by kind)', access: 'admin' },
  'GET /admin/users/{username}/export': { tag: 'Admin', summary: 'A member\'s data export (ZIP)', access: 'admin' },
  'POST /admin/clients': { tag: 'Admin', summary: 'Register an OAuth client (app)', access: 'admin' },
  'GET /admin/clients': { tag: 'Admin', summary: 'List the OAuth clients', access: 'admin' },
  'POST /admin/tokens': { tag: 'Admin', summary: 'Issue a token for a member', access: 'admin' },
  'POST /admin/rooms': { tag: 'Admin', summary: 'Create a room', access: 'admin' },
  'GET /admin/rooms': { tag: 'Admin', summary: 'List the rooms', access: 'admin' },
  'GET /admin/rooms/{room_id}': { tag: 'Admin', summary: 'A room with its members', access: 'admin' },
  'PATCH /admin/rooms/{room_id}': { tag: 'Admin', summary: 'Rename a room or change its settings', access: 'admin' },
  'POST /admin/rooms/{room_id}/members': { tag: 'Admin', summary: 'Add a member to a room', access: 'admin' },
  'DELETE /admin/rooms/{room_id}/members/{username}': { tag: 'Admin', summary: 'Remove a member from a room', access: 'admin' },
  'POST /admin/rooms/{room_id}/class': { tag: 'Admin', summary: 'Start a class in a room', access: 'admin' },
  'POST /admin/rooms/{room_id}/class/end': { tag: 'Admin', summary: 'End the room\'s running class', access: 'admin' },
  'GET /admin/rooms/{room_id}/class': { tag: 'Admin', summary: 'The room\'s running class, or its results while they are shown', access: 'admin' },
  'POST /admin/rooms/{room_id}/display': { tag: 'Admin', summary: 'Issue a new display id for a room (revokes the old one)', access: 'admin' },
  'GET /admin/readings/{username}': { tag: 'Admin', summary: 'Stored readings of a member', access: 'admin' },
  'GET /admin/ingest': { tag: 'Admin', summary: 'Ingest counters', access: 'admin' },
  'POST /admin/integrations': { tag: 'Admin', summary: 'Issue MQTT credentials for an integration (Home Assistant)', access: 'admin' },
  'POST /admin/devices': { tag: 'Admin', summary: 'Pair a device with a member', access: 'admin' },
  'GET /admin/devices': { tag: 'Admin', summary: 'List the paired devices', access: 'admin' },
  'GET /admin/devices/unpaired': { tag: 'Admin', summary: 'Devices seen but not paired', access: 'admin' },
  'GET /admin/devices/nearby': { tag: 'Admin', summary: 'Devices seen but not paired, strongest signal first, the one clearly nearest the box marked', access: 'admin' },
  'DELETE /admin/devices/{device_id}': { tag: 'Admin', summary: 'Unpair a device', access: 'admin' }
}

/** Paths of the web pages a person uses in the browser (sign-in, account, member and operator pages, the device flow's page). */
const PAGE_PATHS = ['/signin', '/signout', '/account', '/me', '/operator', '/device']

/**
 * Why a route is left out of the document, or undefined when it is in it: what is not API is hidden (web pages
 * and their form posts, static files, the documentation itself, Fastify's automatic HEAD routes).
 */
export function hiddenReason (method: string, url: string): string | undefined {
  if (method === 'HEAD') return 'HEAD: Fastify answers HEAD for every GET route; the GET is documented'
  if (url === '/openapi.json' || url === '/docs' || url.startsWith('/docs/')) return 'the API documentation itself'
  if (url.endsWith('*')) return 'static files of the web pages'
  if (PAGE_PATHS.some(p => url === p || url.startsWith(p + '/'))) return 'web page or its form'
  if (method === 'POST' && url === '/oauth2/authorize') return 'the consent form of the sign-in page'
  return undefined
}

const SCOPE_TEXT: Readonly<Record<Scope, string>> = {
  'data:heart_rate:read': 'Read heart-rate data (latest, history, sessions, live)',
  'data:heart_rate:write': 'Write heart-rate readings',
  'profile:read': 'Read the profile',
  'profile:create': 'Create a profile',
  'widgets:read': 'Read widgets',
  'widgets:update': 'Create, change and delete widgets',
  'data:statistics:read': 'Read statistics',
  'data:ingestion_pause:read': 'Read the ingestion pause',
  'data:ingestion_pause:write': 'Pause and resume ingestion',
  'game_mod:configuration:read': 'Read the game-mod configuration',
  'game_mod:configuration:write': 'Write the game-mod configuration',
  'chatapp:rich_presence:config:read': 'Read the rich presence configuration',
  'chatapp:rich_presence:config:write': 'Write the rich presence configuration',
  'data:room:read': 'Stream the rooms the member is in'
}

export const SCOPES: Readonly<Record<string, string>> = Object.fromEntries(ALL_SCOPES.map(s => [s, SCOPE_TEXT[s]]))

/** The security schemes, with the OAuth endpoints at the public URL. */
export function securitySchemes (publicUrl: string): Record<string, unknown> {
  const base = publicUrl.replace(/\/+$/, '')
  return {
    oauth2: {
      type: 'oauth2',
      description: 'A member\'s access token, sent as `Authorization: Bearer <token>`. Tokens come from the flows below, from the ' +
        'device authorization grant (RFC 8628: `POST /oauth2/device_authorization`, then `POST /oauth2/token` with ' +
        '`grant_type=urn:ietf:params:oauth:grant-type:device_code`; OpenAPI 3.1 has no field for this flow), or from the operator ' +
        '(`hr-relay admin token`). Public clients must use PKCE (S256). Client-credentials tokens belong to no member: the data routes refuse them.',
      flows: {
        authorizationCode: { authorizationUrl: `${base}/oauth2/authorize`, tokenUrl: `${base}/oauth2/token`, refreshUrl: `${base}/oauth2/token`, scopes: SCOPES },
        implicit: { authorizationUrl: `${base}/oauth2/authorize`, scopes: SCOPES },
        clientCredentials: { tokenUrl: `${base}/oauth2/token`, scopes: SCOPES }
      }
    },
    accessTokenQuery: {
      type: 'apiKey',
      in: 'query',
      name: 'access_token',
      description: 'The same access token as the query parameter `access_token`, where a client cannot set headers (WebSocket, the write endpoint).'
    },
    adminToken: {
      type: 'http',
      scheme: 'bearer',
      description: 'The admin token of the box (the file `admin-token` in the data directory). The admin API answers on loopback only unless `http.admin_remote` is on.'
    },
    clientBasic: {
      type: 'http',
      scheme: 'basic',
      description: 'OAuth client authentication (RFC 6749 2.3.1): client_id and client_secret with HTTP Basic, or in the form body; a public client sends its client_id only.'
    }
  }
}

/** The operation's security requirements (alternatives); [] when it needs no credentials. */
export function securityOf (access: Access): Array<Record<string, string[]>> {
  if (access === 'public') return []
  if (access === 'admin') return [{ adminToken: [] }]
  if (access === 'client') return [{ clientBasic: [] }, {}]
  if (access === 'token') return [{ oauth2: [] }]
  const scopes = access.scope === null ? [] : [access.scope]
  return access.query === true ? [{ oauth2: scopes }, { accessTokenQuery: scopes }] : [{ oauth2: scopes }]
}
