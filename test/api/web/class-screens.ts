// Screenshots of the class pages (issue 43): into test/artifacts/, and also
// into docs/images/ when HR_RELAY_DOC_SCREENSHOTS=1 (docs/classes.md shows them).
import { copyFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { ARTIFACTS } from '../../helpers/browser.ts'

export async function screenshot (page: Page, name: string): Promise<void> {
  const path = join(ARTIFACTS, name)
  await page.screenshot({ path })
  if (process.env.HR_RELAY_DOC_SCREENSHOTS === '1') {
    const docs = new URL('../../../docs/images/', import.meta.url).pathname
    await mkdir(docs, { recursive: true })
    await copyFile(path, join(docs, name))
  }
}
