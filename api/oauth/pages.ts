// Server-rendered pages of the sign-in, consent, device and account flows.
// Plain HTML forms that work without JavaScript; every control has a label;
// every interpolated value goes through esc().
import type { FastifyReply } from 'fastify'

export function esc (value: unknown): string {
  return String(value)
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;')
}

const STYLE = `body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
label{display:block;margin-top:.75rem;font-weight:600}input[type=text],input[type=password]{width:100%;padding:.4rem;font-size:1rem}
button{margin-top:1rem;margin-right:.5rem;padding:.5rem 1.2rem;font-size:1rem}.token{font-family:monospace;font-size:1.1rem;word-break:break-all;padding:.5rem;background:#eee}
.error{color:#a00}fieldset{border:1px solid #ccc}`

/** Security headers of every page: no framing (clickjacking), no scripts, no caching, no referrer. */
export function pageHeaders (reply: FastifyReply): FastifyReply {
  return reply.headers({
    'content-type': 'text/html; charset=utf-8',
    'x-frame-options': 'DENY',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'referrer-policy': 'no-referrer'
  })
}

export function layout (title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)} · hr-relay</title><style>${STYLE}</style></head>
<body><main><h1>${esc(title)}</h1>
${body}
</main></body></html>`
}

export async function sendPage (reply: FastifyReply, status: number, title: string, body: string): Promise<FastifyReply> {
  return await pageHeaders(reply).code(status).send(layout(title, body))
}

export function hidden (name: string, value: string): string {
  return `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`
}

export async function errorPage (reply: FastifyReply, status: number, title: string, message: string): Promise<FastifyReply> {
  return await sendPage(reply, status, title, `<p class="error" role="alert">${esc(message)}</p>`)
}

export function signInBody (csrf: string, returnTo: string, error?: string): string {
  return `${error === undefined ? '' : `<p class="error" role="alert">${esc(error)}</p>`}
<form method="post" action="/signin">
${hidden('csrf', csrf)}${hidden('return_to', returnTo)}
<label for="username">Username</label>
<input type="text" id="username" name="username" autocomplete="username" required maxlength="100">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required maxlength="1024">
<button type="submit">Sign in</button>
</form>`
}

export function scopeList (scopes: string[]): string {
  return `<ul>${scopes.map(s => `<li><code>${esc(s)}</code></li>`).join('')}</ul>`
}

/** Consent: who asks for what, with Allow and Deny; `fields` are carried as hidden inputs. */
export function consentBody (clientName: string, scopes: string[], action: string, csrf: string, fields: Record<string, string>, extra = ''): string {
  return `<p><strong>${esc(clientName)}</strong> asks for access to your heart-rate account with these permissions:</p>
${scopeList(scopes)}${extra}
<form method="post" action="${esc(action)}">
${hidden('csrf', csrf)}${Object.entries(fields).map(([k, v]) => hidden(k, v)).join('')}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`
}

export function deviceBody (csrf: string, userCode: string, error?: string): string {
  return `<p>Enter the code shown on your device.</p>
${error === undefined ? '' : `<p class="error" role="alert">${esc(error)}</p>`}
<form method="post" action="/device">
${hidden('csrf', csrf)}
<label for="user_code">Code</label>
<input type="text" id="user_code" name="user_code" value="${esc(userCode)}" autocomplete="off" autocapitalize="characters" spellcheck="false" required maxlength="32">
<button type="submit">Continue</button>
</form>`
}

export function tokenBody (label: string, token: string, details: Array<[string, string]>): string {
  return `<p>Copy this ${esc(label)} now; it is not shown again.</p>
<p class="token" id="token" aria-label="${esc(label)}">${esc(token)}</p>
<dl>${details.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join('')}</dl>`
}

export function signOutForm (csrf: string): string {
  return `<form method="post" action="/signout">${hidden('csrf', csrf)}<button type="submit">Sign out</button></form>`
}
