// Secrets at rest: tokens, codes and device codes are stored only as SHA-256
// digests; passwords and client secrets as scrypt hashes. Every comparison of
// secret material is constant-time.
import * as nodeCrypto from 'node:crypto'
import { createHash, randomBytes, randomUUID, scrypt as scryptCb, timingSafeEqual } from 'node:crypto'

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 }

function scrypt (secret: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(secret, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p }, (err, key) => {
      if (err) reject(err)
      else resolve(key)
    })
  })
}

/** `scrypt$N$r$p$salt$hash` (base64url). */
export async function hashSecret (secret: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await scrypt(secret, salt)
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

export async function verifySecret (secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [, n, r, p, saltText, hashText] = parts as [string, string, string, string, string, string]
  const expected = Buffer.from(hashText, 'base64url')
  const key = await new Promise<Buffer>((resolve, reject) => {
    scryptCb(secret, Buffer.from(saltText, 'base64url'), expected.length,
      { N: Number(n), r: Number(r), p: Number(p) }, (err, k) => { if (err) reject(err); else resolve(k) })
  })
  return key.length === expected.length && timingSafeEqual(key, expected)
}

/** A dummy hash verified when the user or client does not exist, so timing does not tell. */
let dummyHash: Promise<string> | undefined
export function dummyVerify (secret: string): Promise<boolean> {
  dummyHash ??= hashSecret(randomBytes(16).toString('hex'))
  return dummyHash.then(h => verifySecret(secret, h)).then(() => false)
}

/**
 * crypto.hash, the one-shot digest (Node 20.12 and later): no Hash object per call, and every API request hashes
 * its token.
 */
const oneShot = (nodeCrypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash

export function digest (secret: string): string {
  return oneShot !== undefined ? oneShot('sha256', secret, 'hex') : createHash('sha256').update(secret, 'utf8').digest('hex')
}

export function safeEqual (a: string, b: string): boolean {
  const ab = Buffer.from(digest(a), 'hex')
  const bb = Buffer.from(digest(b), 'hex')
  return timingSafeEqual(ab, bb)
}

/** 128 random bits as 8-4-4-4-12 hexadecimal: existing clients reject tokens that do not look like a GUID. */
export function newToken (): string {
  return randomUUID()
}

export const GUID_RE = /^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$/

/** A random identifier for records (not a secret). */
export function newId (): string {
  return randomUUID()
}

export function newSecret (bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}
