// Helpers for the OAuth tests: form posts, sign-in through the real pages,
// and an authorization code obtained through the real consent form.
import { createHash, randomBytes } from 'node:crypto'
import type { TestService } from '../../helpers/service.ts'

export interface Answer { status: number, headers: Headers, text: string, json: any }

export async function call (url: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(url, { redirect: 'manual', ...init })
  const text = await res.text()
  let json: any
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, headers: res.headers, text, json }
}

/** POST application/x-www-form-urlencoded. */
export async function post (url: string, params: Record<string, string> | string, headers: Record<string, string> = {}): Promise<Answer> {
  const body = typeof params === 'string' ? params : new URLSearchParams(params).toString()
  return await call(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body })
}

export function basic (id: string, secret: string): string {
  return 'Basic ' + Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')
}

export function csrfOf (html: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(html)
  if (m === null || m[1] === undefined) throw new Error('no csrf field in page')
  return m[1]
}

function cookieOf (headers: Headers): string | undefined {
  const set = headers.get('set-cookie')
  if (set === null) return undefined
  return set.split(';')[0]
}

/** A browser-like session: keeps the session cookie between requests. */
export class Browser {
  cookie = ''
  constructor (readonly base: string) {}

  async get (path: string): Promise<Answer> {
    const a = await call(this.base + path, { headers: this.cookie === '' ? {} : { cookie: this.cookie } })
    this.cookie = cookieOf(a.headers) ?? this.cookie
    return a
  }

  async post (path: string, params: Record<string, string> | string): Promise<Answer> {
    const a = await post(this.base + path, params, this.cookie === '' ? {} : { cookie: this.cookie })
    this.cookie = cookieOf(a.headers) ?? this.cookie
    return a
  }

  async signIn (username: string, password = 'password123'): Promise<Answer> {
    const page = await this.get('/signin')
    return await this.post('/signin', { csrf: csrfOf(page.text), username, password, return_to: '/account' })
  }
}

export function pkcePair (): { verifier: string, challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

export interface AuthorizeOptions {
  client_id: string
  redirect_uri: string
  scope?: string
  response_type?: 'code' | 'token'
  state?: string
  extra?: Record<string, string>
  decision?: 'allow' | 'deny'
}

/** Walks GET /oauth2/authorize → consent → decision; returns the answer to the decision (a 303 normally). */
export async function authorize (browser: Browser, o: AuthorizeOptions): Promise<Answer> {
  const q = new URLSearchParams({ client_id: o.client_id, redirect_uri: o.redirect_uri, response_type: o.response_type ?? 'code', scope: o.scope ?? 'data:heart_rate:read', state: o.state ?? 'st4te', ...(o.extra ?? {}) })
  const page = await browser.get(`/oauth2/authorize?${q.toString()}`)
  if (page.status !== 200) return page
  const fields = Object.fromEntries(q.entries())
  return await browser.post('/oauth2/authorize', { ...fields, csrf: csrfOf(page.text), decision: o.decision ?? 'allow' })
}

/** The authorization code from a 303 to the redirect URI. */
export function codeFrom (answer: Answer): string {
  const loc = answer.headers.get('location')
  if (answer.status !== 303 || loc === null) throw new Error(`expected a redirect, got ${answer.status}`)
  const code = new URL(loc).searchParams.get('code')
  if (code === null) throw new Error(`no code in ${loc}`)
  return code
}

export async function signedInBrowser (svc: TestService, username: string, extra: Record<string, unknown> = {}): Promise<{ browser: Browser, profileId: string }> {
  const profileId = await svc.user(username, extra)
  const browser = new Browser(svc.url)
  const r = await browser.signIn(username)
  if (r.status !== 303) throw new Error(`sign-in failed: ${r.status}`)
  return { browser, profileId }
}

export async function validate (url: string, token: string): Promise<Answer> {
  return await call(`${url}/api/v1/token/validate`, { headers: { authorization: `Bearer ${token}` } })
}
