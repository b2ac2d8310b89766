// Widgets, profile, game-mod configuration and feature status over a listening server.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { call, openWs, refused, wsUrl } from './fetch.ts'

const META = 'bf6bdf21-10a7-4a28-97ec-a239e6c77f8b'
const GUID = /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/

t.test('widgets: create, list, update, delete, errors, overlay stream', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  await s.user('bob')
  const up = await s.token('alice', 'widgets:update')
  const read = await s.token('alice', 'widgets:read')
  const bobUp = await s.token('bob', 'widgets:update widgets:read')
  const config = { ranges: [{ from: 0, to: 100, color: '#00ff00' }], heartColor: '#ff0000', heartEnabled: true, font: 'Roboto' }

  let a = await call(s.url, 'POST', '/api/v1/widgets', { token: up, body: { configuration: config, name: 'My widget', meta_id: META } })
  t.equal(a.status, 200)
  const widget = a.json.widget
  t.match(widget.id, GUID)
  t.same(a.json, { widget: { id: widget.id, meta_id: META, name: 'My widget', configuration: config, premium: false } })

  a = await call(s.url, 'GET', '/api/v1/widgets', { token: read })
  t.same(a.json, { widgets: [{ id: widget.id, meta_id: META, name: 'My widget', configuration: config, premium: false }] })
  a = await call(s.url, 'GET', '/api/v1/widgets', { token: bobUp })
  t.same(a.json, { widgets: [] }, 'bob sees none of alice\'s widgets')

  a = await call(s.url, 'POST', `/api/v1/widgets/${widget.id}`, { token: up, body: { configuration: { heartEnabled: false } } })
  t.equal(a.status, 200)
  t.same(a.json.widget, { id: widget.id, meta_id: META, name: 'My widget', configuration: { heartEnabled: false }, premium: false })

  // Errors
  a = await call(s.url, 'POST', '/api/v1/widgets', { token: up, body: { configuration: {}, name: 'x', meta_id: '00000000-0000-0000-0000-000000000000' } })
  t.equal(a.status, 400)
  t.same(a.json, { error_code: 7014, error_message: 'not_supported_meta_id' })
  for (const [what, body] of [['no configuration', { name: 'x', meta_id: META }], ['null configuration', { configuration: null, name: 'x', meta_id: META }], ['no name', { configuration: {}, meta_id: META }], ['name not a string', { configuration: {}, name: 5, meta_id: META }]] as const) {
    a = await call(s.url, 'POST', '/api/v1/widgets', { token: up, body })
    t.equal(a.status, 400, what)
    t.equal(a.json.error_code, 7013, what)
  }
  a = await call(s.url, 'POST', '/api/v1/widgets', { token: up, raw: '{"configuration": {,}' })
  t.equal(a.status, 400)
  t.equal(a.json.error_code, 7013, 'configuration that is not JSON')
  a = await call(s.url, 'POST', '/api/v1/widgets', { token: read, body: { configuration: {}, name: 'x', meta_id: META } })
  t.equal(a.status, 400)
  t.same(a.json, { error_code: 7011, error_message: 'error_invalid_scope' })
  a = await call(s.url, 'GET', '/api/v1/widgets', { token: up })
  t.same(a.json, { error_code: 7011, error_message: 'error_invalid_scope' })
  a = await call(s.url, 'POST', `/api/v1/widgets/${widget.id}`, { token: bobUp, body: { configuration: {} } })
  t.equal(a.status, 404, 'another user\'s widget is not found')
  t.same(a.json, { error_code: 9404, error_message: 'not_found', detail: 'no such widget' })

  // Overlay stream by widget id (no token).
  const sUp = await s.token('alice', 'data:heart_rate:write')
  const overlay = await openWs(wsUrl(s.url, `/widgets/${widget.id}/stream`))
  const overlayText = await openWs(wsUrl(s.url, `/widgets/${widget.id}/stream?response_mode=text_plain_only_heart_rate`))
  const now = Date.now()
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: sUp, body: { measured_at: now, data: { heart_rate: 88 } } })).status, 200)
  t.same(JSON.parse(await overlay.next()), { measured_at: now, data: { heart_rate: 88 } })
  t.equal(await overlayText.next(), '88')
  const r404 = await refused(wsUrl(s.url, '/widgets/00000000-0000-0000-0000-000000000000/stream'))
  t.equal(r404.status, 404)
  t.same(r404.body, { error_code: 9404, error_message: 'not_found', detail: 'no such widget' })

  // Delete revokes the widget and closes its overlay streams.
  a = await call(s.url, 'DELETE', `/api/v1/widgets/${widget.id}`, { token: bobUp })
  t.equal(a.status, 404)
  a = await call(s.url, 'DELETE', `/api/v1/widgets/${widget.id}`, { token: up })
  t.same(a.json, { id: widget.id, deleted: true })
  t.equal((await overlay.closed).code, 1008)
  t.equal((await overlayText.closed).code, 1008)
  t.equal((await refused(wsUrl(s.url, `/widgets/${widget.id}/stream`))).status, 404)
  t.same((await call(s.url, 'GET', '/api/v1/widgets', { token: read })).json, { widgets: [] })
})

t.test('profile', async t => {
  const s = await startTestService(t)
  await s.user('alice', { channel: 'alice_tv' })
  const p = await s.token('alice', 'profile:read')
  const w = await s.token('alice', 'data:heart_rate:write')
  let a = await call(s.url, 'GET', '/api/v1/profile', { token: p })
  t.equal(a.status, 200)
  t.same(a.json, { channel: 'alice_tv', username: 'alice', mobile_login: false, heart_rate: false })
  await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: Date.now(), data: { heart_rate: 60 } } })
  a = await call(s.url, 'GET', '/api/v1/profile', { token: p })
  t.same(a.json, { channel: 'alice_tv', username: 'alice', mobile_login: false, heart_rate: true })
  a = await call(s.url, 'GET', '/api/v1/profile', { token: w })
  t.equal(a.status, 400)
  t.same(a.json, { error_code: 7011, error_message: 'error_invalid_scope' })
  a = await call(s.url, 'GET', '/api/v1/profile')
  t.equal(a.status, 403)
  t.equal(a.json.error_code, 7009)
})

t.test('game-mod configuration', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const r = await s.token('alice', 'game_mod:configuration:read')
  const w = await s.token('alice', 'game_mod:configuration:write')
  const path = '/api/v1/game-mod/configuration'
  let a = await call(s.url, 'GET', path, { token: r })
  t.equal(a.status, 404)
  t.same(a.json, { error_code: 9404, error_message: 'not_found', detail: 'no game-mod configuration' })

  const full = { disable_start: false, enable_death: true, death_bpm: 180, scale: 1.5, position: 'top_left', custom_x: 10, custom_y: 20.5, heart_pos: 1, death_pos: 2, enable_color_desaturation: true, desaturation_bpm_start: 120, desaturation_bpm_end: 170 }
  a = await call(s.url, 'POST', path, { token: w, body: { configuration: { disable_start: true, death_bpm: 150 } } })
  t.equal(a.status, 200)
  t.same(a.json, { configuration: { disable_start: true, enable_death: null, death_bpm: 150, scale: null, position: null, custom_x: null, custom_y: null, heart_pos: null, death_pos: null, enable_color_desaturation: null, desaturation_bpm_start: null, desaturation_bpm_end: null } })
  t.equal(Object.keys(a.json.configuration).length, 12)
  a = await call(s.url, 'POST', path, { token: w, body: { configuration: full } })
  t.same(a.json, { configuration: full })
  a = await call(s.url, 'GET', path, { token: r })
  t.same(a.json, { configuration: full })
  // Write replaces the whole object.
  a = await call(s.url, 'POST', path, { token: w, body: { configuration: { scale: 2 } } })
  t.equal(a.json.configuration.death_bpm, null)
  t.equal(a.json.configuration.scale, 2)

  for (const [what, body] of [
    ['string for a boolean', { configuration: { disable_start: 'yes' } }],
    ['boolean for a number', { configuration: { death_bpm: true } }],
    ['number for the position', { configuration: { position: 3 } }],
    ['unknown key', { configuration: { colour: 'red' } }],
    ['unknown top-level key', { configuration: {}, extra: 1 }],
    ['no configuration', {}],
    ['configuration not an object', { configuration: [1] }]
  ] as const) {
    a = await call(s.url, 'POST', path, { token: w, body })
    t.equal(a.status, 400, what)
    t.equal(a.json.error_code, 7013, what)
  }
  a = await call(s.url, 'GET', path, { token: r })
  t.equal(a.json.configuration.scale, 2, 'refused writes changed nothing')
  a = await call(s.url, 'GET', path, { token: w })
  t.same(a.json, { error_code: 7011, error_message: 'error_invalid_scope' })
  a = await call(s.url, 'POST', path, { token: r, body: { configuration: {} } })
  t.same(a.json, { error_code: 7011, error_message: 'error_invalid_scope' })
})

t.test('feature status', async t => {
  const s = await startTestService(t)
  await s.user('free')
  await s.user('trial', { premium: 'trial' })
  await s.user('lapsed', { premium: 'subscription', premium_expires_at: Date.now() - 1000 })
  await s.user('life', { premium: 'lifetime' })
  await s.user('granted')
  await s.admin('POST', '/admin/users/granted/features', { feature_id: 'game_mod' })
  const expect: Record<string, Record<string, boolean>> = {
    free: { game_mod: false, premium_widgets: false, deck_ingestion_pause_feature: true, chatapp_rich_presence: false },
    trial: { game_mod: true, premium_widgets: true, deck_ingestion_pause_feature: true, chatapp_rich_presence: true },
    lapsed: { game_mod: false, premium_widgets: false, deck_ingestion_pause_feature: true, chatapp_rich_presence: false },
    life: { game_mod: true, premium_widgets: true, deck_ingestion_pause_feature: true, chatapp_rich_presence: true },
    granted: { game_mod: true, premium_widgets: false, deck_ingestion_pause_feature: true, chatapp_rich_presence: false }
  }
  for (const [user, features] of Object.entries(expect)) {
    const token = await s.token(user, 'profile:read')
    for (const [id, enabled] of Object.entries(features)) {
      const a = await call(s.url, 'GET', `/api/v1/features/${id}`, { token })
      t.equal(a.status, 200)
      t.same(a.json, { id, enabled }, `${user} ${id}`)
    }
  }
  const token = await s.token('free', 'widgets:read')
  let a = await call(s.url, 'GET', '/api/v1/features/teleport', { token })
  t.equal(a.status, 404)
  t.same(a.json, { error_code: 9404, error_message: 'not_found', detail: 'unknown feature teleport' })
  a = await call(s.url, 'GET', '/api/v1/features/game_mod')
  t.equal(a.status, 403)
  t.same(a.json, { error_code: 7009, error_message: 'error_authorization_header_is_not_present' })
})
