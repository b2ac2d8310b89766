// The privacy section of the configuration as the API uses it: whether readings need the member's consent,
// the notice's version, and the notice's text read once at start from privacy.notice_file.
import { readFile } from 'node:fs/promises'
import { ConfigError } from './config.ts'
import type { Config } from './config-schema.ts'
import type { PrivacyConfig } from '../api/services.ts'

/** The largest notice read (a notice is a page of text, not a document store). */
const NOTICE_MAX_BYTES = 256 * 1024

export async function privacyConfig (config: Pick<Config, 'privacy'>): Promise<PrivacyConfig> {
  const p = config.privacy
  const out: PrivacyConfig = { requireConsent: p.require_consent, noticeVersion: p.notice_version }
  if (p.notice_file === undefined) return out
  let text: string
  try {
    text = await readFile(p.notice_file, 'utf8')
  } catch (err) {
    throw new ConfigError('configuration', [`privacy.notice_file: cannot read ${p.notice_file}: ${(err as Error).message}`])
  }
  if (Buffer.byteLength(text) > NOTICE_MAX_BYTES) throw new ConfigError('configuration', [`privacy.notice_file: ${p.notice_file} is over ${NOTICE_MAX_BYTES / 1024} KiB`])
  if (text.trim() === '') throw new ConfigError('configuration', [`privacy.notice_file: ${p.notice_file} is empty`])
  out.noticeText = text
  return out
}
