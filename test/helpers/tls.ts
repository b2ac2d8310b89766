// TLS on the LAN in tests: a key and self-signed certificate made by the
// product's own command (relay/cli-tls.ts), and an HTTPS client that trusts
// exactly that certificate as its CA (or, to be refused, trusts nothing extra).
import { readFile } from 'node:fs/promises'
import { request } from 'node:https'
import { selfSigned, type SelfSignedResult } from '../../relay/cli-tls.ts'

export interface TestCert extends SelfSignedResult { ca: Buffer, keyPem: string }

/** A certificate for localhost and 127.0.0.1 (or `hostname`, `ips`), written into `dir`. */
export async function makeCert (dir: string, options: { hostname?: string, ips?: string[], days?: number, force?: boolean } = {}): Promise<TestCert> {
  const r = await selfSigned({ hostname: options.hostname ?? 'localhost', ips: options.ips ?? ['127.0.0.1'], days: options.days ?? 30, dataDir: dir, force: options.force ?? false })
  return { ...r, ca: await readFile(r.cert_file), keyPem: await readFile(r.key_file, 'utf8') }
}

export interface HttpsAnswer { status: number, headers: Record<string, string | string[] | undefined>, text: string, json: any }

/** One HTTPS request over a fresh connection; `ca` undefined: Node's default trust store only. */
export async function httpsCall (base: string, method: string, path: string, options: { ca?: Buffer, token?: string, body?: unknown, form?: Record<string, string> } = {}): Promise<HttpsAnswer> {
  const headers: Record<string, string> = {}
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  let body: string | undefined
  if (options.body !== undefined) { body = JSON.stringify(options.body); headers['content-type'] = 'application/json' }
  if (options.form !== undefined) { body = new URLSearchParams(options.form).toString(); headers['content-type'] = 'application/x-www-form-urlencoded' }
  return await new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method, headers, agent: false, ...(options.ca === undefined ? {} : { ca: options.ca }) }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { text += c })
      res.on('end', () => {
        let json: any
        try { json = JSON.parse(text) } catch { json = undefined }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}
