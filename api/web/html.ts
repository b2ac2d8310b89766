// HTML helpers of the web pages: escaping, the security headers, one layout
// with a navigation bar, and small form pieces. Scripts and styles are files
// under /web/static (no inline script), so the CSP can forbid inline code.
import type { FastifyReply } from 'fastify'
import { esc } from '../oauth/pages.ts'

export { esc }

export interface HeaderOptions {
  /** Allow other sites to frame the page (the read-only widget overlay only). */
  frameable?: boolean
}

/** Security headers of every web page: scripts and styles from this origin only, no caching, no referrer. */
export function webHeaders (reply: FastifyReply, options: HeaderOptions = {}): FastifyReply {
  const csp = [
    "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
    "connect-src 'self'", "font-src 'self'", "form-action 'self'", "base-uri 'none'",
    options.frameable === true ? 'frame-ancestors *' : "frame-ancestors 'none'"
  ].join('; ')
  reply.headers({
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': csp,
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer'
  })
  if (options.frameable !== true) reply.header('x-frame-options', 'DENY')
  return reply
}

/** JSON for a `<script type="application/json">` data block: `<` escaped so the block cannot be closed early. */
export function jsonBlock (id: string, value: unknown): string {
  const text = JSON.stringify(value).replaceAll('<', '\\u003c').replaceAll('\u2028', '\\u2028').replaceAll('\u2029', '\\u2029')
  return `<script type="application/json" id="${esc(id)}">${text}</script>`
}

export interface LayoutOptions {
  /** Extra stylesheets (absolute paths). */
  styles?: string[]
  /** ES module scripts (absolute paths). */
  scripts?: string[]
  /** Navigation links [href, label]; the current page is marked. */
  nav?: Array<[string, string]>
  current?: string
  /** Class of the body element. */
  bodyClass?: string
  /** Sign-out (or other) form shown at the end of the navigation. */
  navExtra?: string
}

export function layout (title: string, body: string, options: LayoutOptions = {}): string {
  const styles = ['/web/static/site.css', ...(options.styles ?? [])]
  const nav = options.nav === undefined
    ? ''
    : `<nav aria-label="Main"><ul>${options.nav.map(([href, label]) =>
      `<li><a href="${esc(href)}"${href === options.current ? ' aria-current="page"' : ''}>${esc(label)}</a></li>`).join('')}</ul>${options.navExtra ?? ''}</nav>`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)} · hr-relay</title><link rel="icon" href="data:,">
${styles.map(s => `<link rel="stylesheet" href="${esc(s)}">`).join('\n')}
${(options.scripts ?? []).map(s => `<script type="module" src="${esc(s)}"></script>`).join('\n')}
</head>
<body${options.bodyClass === undefined ? '' : ` class="${esc(options.bodyClass)}"`}><a class="skip" href="#main">Skip to content</a>${nav}
<main id="main"><h1>${esc(title)}</h1>
${body}
</main></body></html>`
}

export async function sendHtml (reply: FastifyReply, status: number, html: string, options: HeaderOptions = {}): Promise<FastifyReply> {
  return await webHeaders(reply, options).code(status).send(html)
}

export async function sendPage (reply: FastifyReply, status: number, title: string, body: string, options: LayoutOptions = {}): Promise<FastifyReply> {
  return await sendHtml(reply, status, layout(title, body, options))
}

export function hidden (name: string, value: string): string {
  return `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`
}

/** A POST form with the session's anti-CSRF token. */
export function postForm (action: string, csrf: string, inner: string, attrs = ''): string {
  return `<form method="post" action="${esc(action)}"${attrs === '' ? '' : ' ' + attrs}>${hidden('csrf', csrf)}${inner}</form>`
}

/** A labelled input. */
export function field (id: string, label: string, input: string): string {
  return `<div class="field"><label for="${esc(id)}">${esc(label)}</label>${input}</div>`
}

export function notice (message: string | undefined, kind: 'ok' | 'error' = 'ok'): string {
  if (message === undefined || message === '') return ''
  return `<p class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${esc(message)}</p>`
}

export function table (caption: string, headers: string[], rows: string[][], empty = 'None yet.'): string {
  if (rows.length === 0) return `<p>${esc(caption)}: ${esc(empty)}</p>`
  return `<table><caption>${esc(caption)}</caption><thead><tr>${headers.map(h => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead>
<tbody>${rows.map(r => `<tr>${r.map(c => `<td>${c}</td>`).join('')}</tr>`).join('\n')}</tbody></table>`
}

export function when (ms: number | undefined | null): string {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return '—'
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')
}
