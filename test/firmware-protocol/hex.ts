// Test helper: hex strings such as '16 42 18 04' to bytes and back.
export function hex (text: string): Uint8Array {
  const clean = text.replace(/\s+/g, '')
  if (clean.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(clean)) throw new Error(`bad hex: ${text}`)
  return Uint8Array.from(Buffer.from(clean, 'hex'))
}

export function toHex (bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex').replace(/(..)(?=.)/g, '$1 ')
}
