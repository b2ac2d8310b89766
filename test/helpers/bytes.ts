// Byte-vector helpers for codec tests.
import { ProtocolError } from '../../firmware-protocol/errors.ts'

/** Hex such as '16 42 18 04' to bytes. */
export function hex (text: string): Uint8Array {
  const clean = text.replace(/\s+/g, '')
  if (clean.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(clean)) throw new Error(`bad hex: ${text}`)
  return Uint8Array.from(Buffer.from(clean, 'hex'))
}

/** Bytes to hex such as '16 42 18 04'. */
export function toHex (bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex').replace(/(..)(?=.)/g, '$1 ')
}

/** The ProtocolError code `fn` throws, 'no error' when it returns; anything else is rethrown. */
export function code (fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    if (err instanceof ProtocolError) return err.code
    throw err
  }
  return 'no error'
}
