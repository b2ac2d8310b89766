// Reading back the ZIP files the product writes (member exports) with a reader the product does not use.
import yauzl from 'yauzl'

/** Every entry of a ZIP file: name → bytes, read with yauzl (CRC checked as each entry is read). */
export async function unzip (file: string): Promise<Map<string, Buffer>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => { yauzl.open(file, { lazyEntries: true }, (err, z) => { if (err !== null || z === undefined) reject(err ?? new Error('no zip')); else resolve(z) }) })
  const out = new Map<string, Buffer>()
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      zip.openReadStream(entry, (err, stream) => {
        if (err !== null || stream === undefined) { reject(err ?? new Error('no stream')); return }
        const chunks: Buffer[] = []
        stream.on('data', (c: Buffer) => chunks.push(c))
        stream.on('error', reject)
        stream.on('end', () => { out.set(entry.fileName, Buffer.concat(chunks)); zip.readEntry() })
      })
    })
    zip.on('end', () => { resolve() })
    zip.on('error', reject)
    zip.readEntry()
  })
  return out
}
