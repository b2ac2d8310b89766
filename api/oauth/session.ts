// Sign-in sessions of the server-rendered pages: a random id in an HttpOnly,
// SameSite=Lax cookie, the session itself keyed by the id's SHA-256 digest
// (the id is never stored) with an expiry, and one anti-CSRF token per session
// that every form carries and that is compared in constant time.
// Signed-in sessions (a member's, an operator's) are kept in memory and written
// through to a SessionPersistence: on a box the store's `sign_in_sessions`
// sublevel (persistIn), so they survive a restart; expired ones are removed when
// looked up, when pruned and at load. The CSRF token is stored with its session:
// forms rendered after a restart carry it. Anonymous sessions (the CSRF token of
// a sign-in form) stay in memory, unless the persistence keeps them too.
// On the hub, several instances share the sessions in PostgreSQL
// (hub/store/pg-oauth.ts): `lookup` reads one missing from memory, and a session
// ended on one instance is dropped from the others' memory (`onEnded`).
import type { FastifyReply, FastifyRequest } from 'fastify'
import { digest, newSecret, safeEqual } from '../store/secrets.ts'
import type { Store, Sub } from '../store/db.ts'
import { parseCookies, serializeCookie } from './cookies.ts'

export const SESSION_COOKIE = 'hr_session'

/** Who signed in to the operator pages: an operator account, or the admin token (name "admin token", an owner). */
export interface OperatorIdentity { name: string, role: 'owner' | 'coach' }

export interface Session {
  key: string
  profile_id: string | null
  csrf: string
  expires_at: number
  /** Set on an operator's session. */
  operator?: OperatorIdentity
}

export interface SessionOptions {
  /** Seconds a session lives (default 12 h). */
  ttlSeconds?: number
  /** Most sessions kept; the oldest go first (default 10000). */
  max?: number
  /** Set the Secure attribute (when the public URL is https). */
  secure?: boolean
  now?: () => number
}

/** Where sessions are written through to. */
export interface SessionPersistence {
  /** Whether anonymous sessions (a sign-in form's) are kept too: a form's POST may reach another process. */
  readonly anonymous: boolean
  /** Every session kept, loaded into memory at start (a store only this process uses). */
  all?: () => AsyncIterable<[string, Session]>
  /** One session, read when it is not in memory (a store other processes write too). */
  get?: (key: string) => Promise<Session | undefined>
  put: (s: Session) => Promise<void>
  del: (key: string) => Promise<void>
  /** Calls fn with the key of every session ended by another process ('': any may have ended); returns the unsubscribe. */
  onEnded?: (fn: (key: string) => void) => () => void
}

/** The box's: the store's `sign_in_sessions` sublevel, keyed by the digest of the cookie's id. */
export function levelSessions (store: Store): SessionPersistence {
  const sub: Sub<Session> = store.sub<Session>('sign_in_sessions')
  return {
    anonymous: false,
    all: () => sub.iterator(),
    put: async s => { await store.batch([{ type: 'put', sublevel: sub, key: s.key, value: s }], { sync: true }) },
    del: async key => { await store.batch([{ type: 'del', sublevel: sub, key }], { sync: true }) }
  }
}

export class Sessions {
  private readonly map = new Map<string, Session>()
  private readonly ttl: number
  private readonly max: number
  private readonly secure: boolean
  private readonly now: () => number
  private persistence: SessionPersistence | undefined
  private unsubscribe: (() => void) | undefined
  private readonly endFollowers = new Set<(key: string) => void>()
  /** Writes to the store, one after another; flushed() waits for them. */
  private writes: Promise<void> = Promise.resolve()

  constructor (options: SessionOptions = {}) {
    this.ttl = (options.ttlSeconds ?? 12 * 3600) * 1000
    this.max = options.max ?? 10_000
    this.secure = options.secure ?? false
    this.now = options.now ?? Date.now
  }

  get size (): number { return this.map.size }

  /** Loads the signed-in sessions kept in the store (dropping expired ones) and writes new ones through to it. */
  async persistIn (store: Store): Promise<void> {
    await this.persistWith(levelSessions(store))
  }

  /** Loads the sessions `p` keeps (when it lists them), and writes changes through to it. Only the first call counts. */
  async persistWith (p: SessionPersistence): Promise<void> {
    if (this.persistence !== undefined) return
    this.persistence = p
    this.unsubscribe = p.onEnded?.(key => {
      if (key === '') this.map.clear(); else this.map.delete(key)
      this.ended(key)
    })
    if (p.all !== undefined) {
      const now = this.now()
      const expired: string[] = []
      for await (const [key, s] of p.all()) {
        if (s.expires_at <= now) expired.push(key)
        else this.map.set(key, s)
      }
      for (const key of expired) this.forget(key)
    }
    await this.flushed()
  }

  /** Stops following sessions ended by other processes. */
  stop (): void {
    this.unsubscribe?.()
    this.unsubscribe = undefined
  }

  /** Resolves once every session change so far is on disk. */
  async flushed (): Promise<void> { await this.writes }

  private write (op: () => Promise<void>): void {
    this.writes = this.writes.then(op).catch(() => undefined)
  }

  /** Whether the persistence keeps this session. */
  private kept (s: Session): boolean {
    return this.persistence !== undefined && (this.persistence.anonymous || s.profile_id !== null || s.operator !== undefined)
  }

  private save (s: Session): void {
    const p = this.persistence
    if (p === undefined || !this.kept(s)) return
    this.write(async () => { await p.put(s) })
  }

  private forget (key: string): void {
    const p = this.persistence
    if (p === undefined) return
    this.write(async () => { await p.del(key) })
  }

  private drop (key: string): void {
    const s = this.map.get(key)
    this.map.delete(key)
    if (s !== undefined && this.kept(s)) this.forget(key)
    if (s !== undefined) this.ended(key)
  }

  /** Tells the followers (onEnd) that the session with this key ended ('': any may have). */
  private ended (key: string): void {
    for (const fn of this.endFollowers) fn(key)
  }

  /** Calls fn with the key of every session that ends (signed out, expired, erased; '': any may have); returns the unsubscribe. */
  onEnd (fn: (key: string) => void): () => void {
    this.endFollowers.add(fn)
    return () => { this.endFollowers.delete(fn) }
  }

  private keyOf (request: FastifyRequest): string | undefined {
    const id = parseCookies(request.headers.cookie).get(SESSION_COOKIE)
    if (id === undefined || id.length === 0 || id.length > 100) return undefined
    return digest(id)
  }

  private live (key: string, s: Session | undefined): Session | undefined {
    if (s === undefined) return undefined
    if (s.expires_at <= this.now()) { this.drop(key); return undefined }
    return s
  }

  /** Whether the session with this key is still live in memory (a stream bound to a session asks it). */
  alive (key: string): boolean {
    return this.live(key, this.map.get(key)) !== undefined
  }

  /** The live session of this request, if any, from memory. */
  find (request: FastifyRequest): Session | undefined {
    const key = this.keyOf(request)
    return key === undefined ? undefined : this.live(key, this.map.get(key))
  }

  /** The live session of this request, if any: from memory, else (sessions shared by several processes) from the persistence. */
  async lookup (request: FastifyRequest): Promise<Session | undefined> {
    const key = this.keyOf(request)
    if (key === undefined) return undefined
    const known = this.map.get(key)
    const p = this.persistence
    if (known !== undefined || p?.get === undefined) return this.live(key, known)
    const s = await p.get(key)
    if (s === undefined || s.key !== key) return undefined
    // Ended meanwhile, or found by a concurrent lookup: memory wins.
    const again = this.map.get(key)
    if (again !== undefined) return this.live(key, again)
    if (s.expires_at > this.now()) {
      this.prune()
      this.map.set(key, s)
    }
    return this.live(key, s)
  }

  /** The session of this request, creating an anonymous one (and its cookie) when there is none. */
  ensure (request: FastifyRequest, reply: FastifyReply): Session {
    return this.find(request) ?? this.start(reply, null)
  }

  /** A new session with a new id and CSRF token (also on sign-in, against session fixation). */
  start (reply: FastifyReply, profileId: string | null, previous?: Session, operator?: OperatorIdentity): Session {
    if (previous !== undefined) this.drop(previous.key)
    this.prune()
    const id = newSecret(32)
    const s: Session = { key: digest(id), profile_id: profileId, csrf: newSecret(32), expires_at: this.now() + this.ttl, ...(operator === undefined ? {} : { operator }) }
    this.map.set(s.key, s)
    this.save(s)
    reply.header('set-cookie', serializeCookie(SESSION_COOKIE, id, { maxAgeSeconds: this.ttl / 1000, secure: this.secure }))
    return s
  }

  end (reply: FastifyReply, session: Session | undefined): void {
    if (session !== undefined) this.drop(session.key)
    reply.header('set-cookie', serializeCookie(SESSION_COOKIE, '', { maxAgeSeconds: 0, secure: this.secure }))
  }

  /** Ends every session of this member (their erasure); returns how many. */
  endAllFor (profileId: string): number {
    let n = 0
    for (const [k, s] of this.map) if (s.profile_id === profileId) { this.drop(k); n++ }
    return n
  }

  /** Constant-time check of a form's CSRF token against the session's. */
  csrfValid (session: Session | undefined, given: string | undefined): boolean {
    if (session === undefined || typeof given !== 'string' || given.length === 0) return false
    return safeEqual(session.csrf, given)
  }

  private prune (): void {
    const now = this.now()
    for (const [k, s] of this.map) if (s.expires_at <= now) this.drop(k)
    while (this.map.size >= this.max) {
      const oldest = this.map.keys().next()
      if (oldest.done === true) break
      // Memory in front of a shared store is a cache: the session stays in the store.
      if (this.persistence?.get !== undefined) this.map.delete(oldest.value)
      else this.drop(oldest.value)
    }
  }
}

const shared = new WeakMap<object, Sessions>()

/**
 * The one Sessions of a server, keyed by its services object, so the OAuth
 * pages and the web pages (api/web/) see the same sign-in (added for issue 6).
 */
/** The sessions of one service instance, keyed by an object of it that every feature shares (its ApiConfig). */
export function sharedSessions (owner: object, options: SessionOptions = {}): Sessions {
  let s = shared.get(owner)
  if (s === undefined) { s = new Sessions(options); shared.set(owner, s) }
  return s
}
