// Operator accounts: the people who run the box's operator pages, each with a
// role (owner: everything; coach: rooms and displays, see api/web/operator-auth.ts)
// and a password kept only as a scrypt hash (secrets.ts, memory-hard, salted).
// Names are compared case-insensitively. The last owner cannot be removed.
import type { Store, Sub } from './db.ts'
import { dummyVerify, hashSecret, verifySecret } from './secrets.ts'
import { KeyedLock } from './lock.ts'

export type OperatorRole = 'owner' | 'coach'
export const OPERATOR_ROLES: readonly OperatorRole[] = ['owner', 'coach']

export interface OperatorRecord { name: string, role: OperatorRole, password_hash: string, created_at: number }

/** What the API and pages show of an operator: never the hash. */
export interface OperatorView { name: string, role: OperatorRole, created_at: number }

export const OPERATOR_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

export class OperatorError extends Error {
  constructor (readonly reason: 'exists' | 'not_found' | 'last_owner' | 'invalid', message: string) {
    super(message)
    this.name = 'OperatorError'
  }
}

export function viewOf (o: OperatorRecord): OperatorView { return { name: o.name, role: o.role, created_at: o.created_at } }

export class Operators {
  private readonly sub: Sub<OperatorRecord>
  private readonly lock = new KeyedLock()

  constructor (private readonly store: Store) {
    this.sub = store.sub<OperatorRecord>('operators')
  }

  private static key (name: string): string { return name.normalize('NFC').toLowerCase() }

  async add (name: string, role: OperatorRole, password: string, now = Date.now()): Promise<OperatorView> {
    if (!OPERATOR_NAME.test(name)) throw new OperatorError('invalid', 'an operator name is 1 to 64 letters, digits, _ . or -, starting with a letter or digit')
    if (!OPERATOR_ROLES.includes(role)) throw new OperatorError('invalid', 'the role is owner or coach')
    if (password.length < 10 || password.length > 200) throw new OperatorError('invalid', 'the password is 10 to 200 characters')
    return await this.lock.run('all', async () => {
      if (await this.sub.get(Operators.key(name)) !== undefined) throw new OperatorError('exists', `an operator named ${name} exists already`)
      const record: OperatorRecord = { name, role, password_hash: await hashSecret(password), created_at: now }
      await this.store.batch([{ type: 'put', sublevel: this.sub, key: Operators.key(name), value: record }], { sync: true })
      return viewOf(record)
    })
  }

  async list (): Promise<OperatorView[]> {
    const out: OperatorView[] = []
    for await (const o of this.sub.values()) out.push(viewOf(o))
    return out
  }

  /** Removes an operator; the last owner stays (someone must be able to manage the box). */
  async remove (name: string): Promise<OperatorView> {
    return await this.lock.run('all', async () => {
      const o = await this.sub.get(Operators.key(name))
      if (o === undefined) throw new OperatorError('not_found', `no operator named ${name}`)
      if (o.role === 'owner' && (await this.list()).filter(x => x.role === 'owner').length <= 1) {
        throw new OperatorError('last_owner', `${o.name} is the last owner: add another owner first`)
      }
      await this.store.batch([{ type: 'del', sublevel: this.sub, key: Operators.key(name) }], { sync: true })
      return viewOf(o)
    })
  }

  /** Checks a password; an unknown name costs the same as a wrong password. */
  async authenticate (name: string, password: string): Promise<OperatorView | undefined> {
    const o = name.length > 64 ? undefined : await this.sub.get(Operators.key(name))
    if (o === undefined) { await dummyVerify(password); return undefined }
    return await verifySecret(password, o.password_hash) ? viewOf(o) : undefined
  }
}

const stores = new WeakMap<Store, Operators>()

/** The operator accounts of a store. */
export function operatorsOf (store: Store): Operators {
  let o = stores.get(store)
  if (o === undefined) { o = new Operators(store); stores.set(store, o) }
  return o
}
