// The API reference page at /docs: everything it loads comes from the box
// (it may have no internet), and it renders the document in real Chromium.
import t from 'tap'
import { join } from 'node:path'
import { startTestService } from '../../helpers/service.ts'
import { ARTIFACTS, launch, newPage } from '../../helpers/browser.ts'

/** Every src= and href= of an HTML text. */
function links (html: string): string[] {
  return [...html.matchAll(/\b(?:src|href)\s*=\s*["']([^"']*)["']/gi)].map(m => m[1] ?? '')
}

t.test('GET /docs: an HTML page, without a token, that names files of this origin only', async t => {
  const svc = await startTestService(t)
  const res = await fetch(svc.url + '/docs')
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8')
  const csp = res.headers.get('content-security-policy') ?? ''
  t.match(csp, /default-src 'none'/)
  t.match(csp, /script-src 'self';/, 'scripts from this origin only, none inline')
  const html = await res.text()
  t.notMatch(html, /<script>/, 'no inline script')
  const urls = links(html)
  t.same(urls, ['/docs/static/swagger-ui.css', '/docs/static/swagger-ui-bundle.js', '/docs/static/start.js'])
  for (const u of urls) t.ok(u.startsWith('/') && !u.startsWith('//'), `${u} is a path on this box`)
  t.notOk(html.includes(svc.adminToken), 'no admin token in the page')

  const start = await fetch(svc.url + '/docs/static/start.js')
  t.equal(start.status, 200)
  t.equal(start.headers.get('content-type'), 'text/javascript; charset=utf-8')
  const startJs = await start.text()
  t.match(startJs, /url: '\/openapi\.json'/)
  t.match(startJs, /validatorUrl: null/, 'no validator badge fetched from elsewhere')
  t.notMatch(startJs, /https?:/, 'start.js names no other site')

  const css = await fetch(svc.url + '/docs/static/swagger-ui.css')
  t.equal(css.status, 200)
  t.equal(css.headers.get('content-type'), 'text/css; charset=utf-8')
  const cssText = await css.text()
  t.notMatch(cssText, /@import/, 'the style sheet imports nothing')
  t.notMatch(cssText, /url\(\s*["']?(https?:)?\/\//, 'the style sheet loads nothing from another site (no web fonts)')

  const bundle = await fetch(svc.url + '/docs/static/swagger-ui-bundle.js')
  t.equal(bundle.status, 200)
  t.equal(bundle.headers.get('content-type'), 'text/javascript; charset=utf-8')
  t.ok((await bundle.arrayBuffer()).byteLength > 100_000, 'the Swagger UI bundle itself')

  t.equal((await fetch(svc.url + '/docs/static/index.html')).status, 404, 'only the files the page uses are served')
  t.equal((await fetch(svc.url + '/docs/static/..%2Fpackage.json')).status, 404)
})

t.test('/docs renders the document in Chromium, and no request leaves the box', async t => {
  const svc = await startTestService(t)
  const browser = await launch(t)
  const errors: string[] = []
  const { context, page } = await newPage(browser, errors)
  const requested: string[] = []
  // Every request the page makes is recorded; one to another host is refused before it leaves.
  await context.route('**/*', async route => {
    const url = route.request().url()
    requested.push(url)
    if (new URL(url).hostname === '127.0.0.1') await route.continue()
    else await route.abort()
  })
  await page.goto(svc.url + '/docs')
  await page.locator('.info .title', { hasText: 'hr-relay' }).waitFor()
  const latest = page.locator('.opblock-summary-path[data-path="/api/v1/data/heart_rate/latest"]')
  await latest.first().waitFor()
  t.match(await page.locator('.info .title').textContent(), /^hr-relay/, 'the API\'s title')
  t.equal(await latest.count(), 1, 'the latest-reading route is listed')
  t.ok(await page.locator('.opblock-tag', { hasText: 'Heart rate' }).count() >= 1, 'routes are grouped by tag')
  t.ok(await page.getByRole('button', { name: 'Authorize' }).count() >= 1, 'the security schemes can be tried')
  await page.screenshot({ path: join(ARTIFACTS, 'openapi-docs.png') })

  t.ok(requested.includes(`${svc.url}/openapi.json`), 'the page read the document from the box')
  t.same(requested.filter(u => new URL(u).hostname !== '127.0.0.1'), [], 'no request to another host')
  t.same(errors, [], 'no page error, no console error (a CSP violation would be one)')
})
