// Over a listening socket: static assets (only uPlot's two files from
// node_modules), security headers of the pages, escaping, and the room
// display's state route behind its capability.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { startTestService } from '../../helpers/service.ts'

t.test('static assets: the page scripts and uPlot, nothing else from node_modules', async t => {
  const svc = await startTestService(t)
  for (const path of ['/web/static/widget.js', '/web/static/live.js', '/web/static/room.js', '/web/static/chart.js', '/web/vendor/uplot/uPlot.esm.js']) {
    const res = await fetch(svc.url + path)
    t.equal(res.status, 200, path)
    t.match(res.headers.get('content-type') ?? '', /javascript/, path)
    t.equal(res.headers.get('x-content-type-options'), 'nosniff')
  }
  const css = await fetch(`${svc.url}/web/vendor/uplot/uPlot.min.css`)
  t.equal(css.status, 200)
  t.match(css.headers.get('content-type') ?? '', /text\/css/)
  for (const path of ['/web/vendor/uplot/uPlot.cjs.js', '/web/vendor/uplot/../package.json', '/web/vendor/uplot/%2e%2e/package.json', '/web/static/../pages.ts', '/web/static/%2e%2e/pages.ts']) {
    const res = await fetch(svc.url + path)
    t.equal(res.status, 404, path)
  }
  const dir = await fetch(`${svc.url}/web/static/`)
  t.equal(dir.status, 403, 'no directory listing')
  t.same(await dir.json(), { error_code: 9403, error_message: 'forbidden' })
})

t.test('static assets: the bytes on disk, cache headers, a conditional request answered 304, HEAD, and only scripts and styles', async t => {
  const svc = await startTestService(t)
  const disk = await readFile(new URL('../../../api/web/static/room.css', import.meta.url))
  const res = await fetch(svc.url + '/web/static/room.css')
  t.equal(res.status, 200)
  t.same(Buffer.from(await res.arrayBuffer()), disk)
  t.equal(res.headers.get('content-type'), 'text/css; charset=utf-8')
  t.equal(res.headers.get('cache-control'), 'public, max-age=60')
  const etag = res.headers.get('etag') ?? ''
  t.match(etag, /^W\/"[0-9a-f]+-[0-9a-f]+"$/)
  t.ok(Number.isFinite(Date.parse(res.headers.get('last-modified') ?? '')), 'last-modified is a date')
  const again = await fetch(svc.url + '/web/static/room.css', { headers: { 'if-none-match': etag } })
  t.equal(again.status, 304)
  t.equal((await again.arrayBuffer()).byteLength, 0)
  const other = await fetch(svc.url + '/web/static/room.css', { headers: { 'if-none-match': 'W/"0-0"' } })
  t.equal(other.status, 200, 'another ETag gets the file')
  const head = await fetch(svc.url + '/web/static/widget.js', { method: 'HEAD' })
  t.equal(head.status, 200)
  t.match(head.headers.get('content-type') ?? '', /^text\/javascript/)
  t.equal((await head.arrayBuffer()).byteLength, 0)
  t.equal((await fetch(svc.url + '/web/vendor/uplot/uPlot.esm.js')).headers.get('cache-control'), 'public, max-age=3600')
  for (const path of ['/web/static/zones.d.ts', '/web/static/.hidden.js', '/web/static/nothing.js', '/web/static/a%2fb.js', '/web/static']) {
    const r = await fetch(svc.url + path)
    t.equal(r.status, 404, path)
    t.same(await r.json(), { error_code: 9404, error_message: 'not_found' }, path)
  }
})

t.test('page headers, escaping, and the display state behind its capability', async t => {
  const svc = await startTestService(t)
  const profile = await svc.user('eve')
  const w = await svc.service.services.widgets.create(profile, { meta_id: 'bf6bdf21-10a7-4a28-97ec-a239e6c77f8b', name: '<img src=x onerror=alert(1)>', configuration: { font: '</script><script>alert(2)</script>' } })
  const view = await fetch(`${svc.url}/widgets/${w.id}/view`)
  t.equal(view.status, 200)
  const html = await view.text()
  t.notMatch(html, /<img src=x/)
  t.match(html, /<title>&lt;img src=x onerror=alert\(1\)&gt;<\/title>/)
  t.notMatch(html, /<script>alert\(2\)/)
  t.match(view.headers.get('content-security-policy') ?? '', /^default-src 'none'; script-src 'self'; .*frame-ancestors \*$/)
  t.equal(view.headers.get('x-frame-options'), null, 'the overlay may be framed')
  t.equal(view.headers.get('referrer-policy'), 'no-referrer')

  const signin = await fetch(`${svc.url}/operator/signin`)
  t.equal(signin.status, 200)
  t.equal(signin.headers.get('x-frame-options'), 'DENY')
  t.match(signin.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/)
  t.match(signin.headers.get('set-cookie') ?? '', /HttpOnly; SameSite=Lax/)

  const room = await svc.service.services.rooms.create('Morning <b>HIIT</b>')
  await svc.service.services.rooms.upsertMember(room.room_id, profile, { display_name: 'Eve', max_heart_rate: 185 })
  const state = await fetch(`${svc.url}/rooms/${room.room_id}/display/state?display_id=${room.display_id}`)
  t.equal(state.status, 200)
  t.equal(state.headers.get('cache-control'), 'no-store')
  const body = await state.json() as { room: unknown, members: Array<Record<string, unknown>>, server_now: number }
  t.ok(Math.abs(body.server_now - Date.now()) < 60_000, 'server time for the no-signal rule')
  t.same(body.room, { room_id: room.room_id, name: 'Morning <b>HIIT</b>' })
  t.same(body.members, [{ profile_id: profile, display_name: 'Eve', max_heart_rate: 185, max_source: 'configured', zones: [50, 60, 70, 80, 90], latest: null, calories_today_kcal: 0, trend: [], paused: false, paused_until: null }])
  const page = await fetch(`${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`)
  t.equal(page.status, 200)
  const display = await page.text()
  t.match(display, /<h1 id="room-name">Morning &lt;b&gt;HIIT&lt;\/b&gt;<\/h1>/)
  t.notMatch(display, /<b>HIIT/, 'the embedded state escapes < too')

  for (const q of ['', '?display_id=', `?display_id=${room.room_id}`, `?display_id=${room.display_id}x`]) {
    const s = await fetch(`${svc.url}/rooms/${room.room_id}/display/state${q}`)
    t.equal(s.status, 404, `state ${q}`)
    t.same(await s.json(), { error_code: 9404, error_message: 'not_found', detail: 'no such room display' })
    t.equal((await fetch(`${svc.url}/rooms/${room.room_id}/display${q}`)).status, 404, `page ${q}`)
  }
  const repeated = await fetch(`${svc.url}/rooms/${room.room_id}/display/state?display_id=${room.display_id}&display_id=${room.display_id}`)
  t.equal(repeated.status, 400, 'a repeated capability is refused, not guessed')
  t.equal((await fetch(`${svc.url}/rooms/${'x'.repeat(150)}/display`)).status, 400)
})
