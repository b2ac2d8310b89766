// Real headless Chromium (Debian's /usr/bin/chromium) through playwright-core
// for the web page tests, plus small helpers: write a reading over the API,
// wait for a condition in the page, and the screenshot folder (git-ignored).
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import tap from 'tap'

// Page-side globals used inside the functions these helpers send to the browser
// (the project's tsconfig has no DOM lib).
interface PageElement { textContent: string | null, getAttribute (name: string): string | null }
declare const document: { querySelector (selector: string): PageElement | null }
declare function getComputedStyle (e: PageElement): { getPropertyValue (prop: string): string }

export const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts')

interface Tap { teardown (fn: () => unknown): void }

/**
 * Chromium's WebUI omnibox popups: every new context opens a browser window whose
 * omnibox preloads two chrome://omnibox-popup.top-chrome pages in a renderer of
 * their own, which about doubled the CPU cost of a context (about 1.8 s instead
 * of 0.8 s of CPU on the 2-core CI machine). Headless tests never open the omnibox.
 */
const DISABLED_FEATURES = ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup']

/** chromium.sh: /usr/bin/chromium with the --disable-features switches merged (Chromium honours only the last one). */
const CHROMIUM = join(import.meta.dirname, 'chromium.sh')

let shared: Promise<Browser> | undefined

/**
 * The test file's Chromium, launched on the first call and closed when the
 * file's tests end (a launch costs seconds of CPU). The contexts a test opens
 * after its call are closed when that test ends, so tests share the browser
 * but not pages, cookies or timers.
 */
export async function launch (t: Tap): Promise<Browser> {
  if (shared === undefined) {
    const starting = Promise.all([
      chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', `--disable-features=${DISABLED_FEATURES.join(',')}`],
        // The browser outlives a test's private D-Bus (the BlueZ emulator's): it must not connect to it, or it exits when that bus stops.
        env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0] !== 'DBUS_SYSTEM_BUS_ADDRESS' && e[1] !== undefined))
      }),
      mkdir(ARTIFACTS, { recursive: true })
    ]).then(([browser]) => browser)
    shared = starting
    tap.teardown(async () => { await (await starting).close() })
  }
  const browser = await shared
  const before = new Set(browser.contexts())
  t.teardown(async () => {
    await Promise.all(browser.contexts().filter(c => !before.has(c)).map(async c => { await c.close() }))
  })
  return browser
}

/** A fresh context (own cookies) with a 1920x1080 viewport that fails the test on page errors. */
export async function newPage (browser: Browser, errors: string[] = []): Promise<{ context: BrowserContext, page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1920, height: 1080 } })
  const page = await context.newPage()
  page.on('pageerror', err => { errors.push(String(err)) })
  page.on('console', msg => { if (msg.type() === 'error') errors.push(msg.text()) })
  return { context, page }
}

/** Writes one reading with POST /api/v1/data; returns the status. */
export async function postReading (url: string, token: string, bpm: number, at = Date.now()): Promise<number> {
  const res = await fetch(`${url}/api/v1/data`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ measured_at: at, data: { heart_rate: bpm } })
  })
  await res.text()
  return res.status
}

/** Polls fn(arg) in the page until it returns a truthy value (generous timeout, no fixed sleeps; no eval, the pages' CSP forbids it). */
export async function until<A> (page: Page, fn: (arg: A) => unknown, arg: A, timeout = 20_000): Promise<unknown> {
  const handle = await page.waitForFunction(fn as (arg: unknown) => unknown, arg as unknown, { timeout, polling: 100 })
  return await handle.jsonValue()
}

/** Waits until the element's text is exactly `text`. */
export async function textIs (page: Page, selector: string, text: string, timeout = 20_000): Promise<void> {
  await until(page, ([s, x]) => document.querySelector(s)?.textContent === x, [selector, text] as const, timeout)
}

/** Waits until the element's data-<key> is `value`. */
export async function dataIs (page: Page, selector: string, key: string, value: string, timeout = 20_000): Promise<void> {
  await until(page, ([s, k, v]) => document.querySelector(s)?.getAttribute(`data-${k}`) === v, [selector, key, value] as const, timeout)
}

/** getComputedStyle(element)[prop]. */
export async function style (page: Page, selector: string, prop: string): Promise<string> {
  return await page.$eval(selector, (e: PageElement, p: string) => getComputedStyle(e).getPropertyValue(p), prop)
}

/** The element's data-<key> attribute. */
export async function data (page: Page, selector: string, key: string): Promise<string | null> {
  return await page.$eval(selector, (e: PageElement, k: string) => e.getAttribute(`data-${k}`), key)
}

/** The element's text. */
export async function text (page: Page, selector: string): Promise<string | null> {
  return await page.$eval(selector, (e: PageElement) => e.textContent)
}

export async function json (res: Response): Promise<any> {
  const text = await res.text()
  return text === '' ? undefined : JSON.parse(text)
}

/** Visible form controls without an accessible name (a <label>, aria-label, aria-labelledby, or a button's text). */
export async function unlabelled (page: Page): Promise<string[]> {
  return await page.evaluate(`Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea, button'))
    .filter(e => !((e.labels && e.labels.length > 0) || e.getAttribute('aria-label') || e.getAttribute('aria-labelledby') || (e.tagName === 'BUTTON' && e.textContent.trim() !== '')))
    .map(e => e.outerHTML.slice(0, 120))`) as string[]
}

/** The id of the focused element. */
export async function focusedId (page: Page): Promise<string> {
  return await page.evaluate('document.activeElement ? document.activeElement.id : ""') as string
}
