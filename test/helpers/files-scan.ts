// Reads every file under a directory, as bytes, and says which ones contain a
// string, in the encodings the store could use for it: UTF-8, UTF-16LE and
// its hex and base64 forms. The erasure tests use it on the data directory.
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'

/** Every regular file under dir, recursively. */
export async function filesUnder (dir: string): Promise<string[]> {
  const out: string[] = []
  let entries
  try { entries = await readdir(dir, { withFileTypes: true }) } catch (err) { if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out; throw err }
  for (const e of entries) {
    const p = join(dir, e.name)
    if (e.isDirectory()) out.push(...await filesUnder(p))
    else if (e.isFile()) out.push(p)
  }
  return out.sort()
}

/** The forms of `text` looked for: UTF-8, UTF-16LE, lower and upper hex of the UTF-8 bytes, base64. */
export function encodingsOf (text: string): Buffer[] {
  const utf8 = Buffer.from(text, 'utf8')
  return [utf8, Buffer.from(text, 'utf16le'), Buffer.from(utf8.toString('hex')), Buffer.from(utf8.toString('hex').toUpperCase()), Buffer.from(utf8.toString('base64').replace(/=+$/, ''))]
}

/** The files under dir (relative names) that contain any form of any of the texts, with the text found. */
export async function filesContaining (dir: string, texts: string[]): Promise<string[]> {
  const found: string[] = []
  for (const file of await filesUnder(dir)) {
    let bytes: Buffer
    // A file the service removed meanwhile (a LevelDB log or table replaced) holds nothing any more.
    try { bytes = await readFile(file) } catch (err) { if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; throw err }
    for (const text of texts) {
      if (encodingsOf(text).some(form => bytes.includes(form))) found.push(`${file.slice(dir.length + 1)}: ${text}`)
    }
  }
  return found
}
