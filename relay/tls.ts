// TLS on the LAN: reads the certificate and private key files that http.tls
// and mqtt.tls name, and checks them before anything listens, so that a
// missing, unreadable or mismatched file is a configuration error naming the
// key, not a crash at the first handshake. The key's bytes go to node:tls
// only: they are never logged nor put in an error message.
import { readFile } from 'node:fs/promises'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { ConfigError } from './config.ts'

export interface TlsFiles { cert_file: string, key_file: string }

/** What node:tls needs, and what is shown of the certificate. */
export interface TlsMaterial {
  cert: Buffer
  key: Buffer
  /** SHA-256 of the certificate (DER), colon-separated hex, as browsers and `openssl x509 -fingerprint -sha256` show it. */
  fingerprint256: string
  /** The certificate's last valid day, ISO 8601. */
  validTo: string
}

const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied (the service cannot read it)',
  EISDIR: 'a directory, not a file'
}

async function readOne (key: string, path: string): Promise<Buffer | string> {
  try {
    return await readFile(path)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? ''
    return `${key}: cannot read ${path}: ${REASONS[code] ?? code}${code === '' || REASONS[code] === undefined ? '' : ` [${code}]`}`
  }
}

/**
 * Reads and checks `files` of the configuration key `key` ('http.tls' or 'mqtt.tls'): the certificate parses as
 * PEM X.509, the key as an unencrypted PEM private key, and the key is the certificate's. Throws a ConfigError
 * with every problem found.
 */
export async function loadTlsFiles (key: string, files: TlsFiles): Promise<TlsMaterial> {
  const [cert, privateKey] = await Promise.all([readOne(`${key}.cert_file`, files.cert_file), readOne(`${key}.key_file`, files.key_file)])
  const problems = [cert, privateKey].filter((v): v is string => typeof v === 'string')
  let x509: X509Certificate | undefined
  if (typeof cert !== 'string') {
    try { x509 = new X509Certificate(cert) } catch { problems.push(`${key}.cert_file: ${files.cert_file} is not a PEM certificate`) }
  }
  let parsed: ReturnType<typeof createPrivateKey> | undefined
  if (typeof privateKey !== 'string') {
    // Parse errors may quote the input: only the fact is reported.
    try { parsed = createPrivateKey({ key: privateKey, format: 'pem' }) } catch { problems.push(`${key}.key_file: ${files.key_file} is not a PEM private key, or it is encrypted (remove the passphrase)`) }
  }
  if (x509 !== undefined && parsed !== undefined && !x509.checkPrivateKey(parsed)) {
    problems.push(`${key}.key_file: the key in ${files.key_file} does not belong to the certificate in ${files.cert_file} (${key}.cert_file)`)
  }
  if (problems.length > 0 || x509 === undefined || typeof cert === 'string' || typeof privateKey === 'string') throw new ConfigError('configuration', problems)
  return { cert, key: privateKey, fingerprint256: x509.fingerprint256, validTo: x509.validToDate.toISOString() }
}
