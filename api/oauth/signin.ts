// The sign-in and sign-out pages. A successful sign-in starts a new session
// (new id, new CSRF token) so a session id planted before sign-in is useless.
import type { FastifyInstance } from 'fastify'
import { csrfOk, pageForm, safeReturnTo, type OAuthContext } from './context.ts'
import { queryOf } from './form.ts'
import { errorPage, sendPage, signInBody } from './pages.ts'

export function signInRoutes (app: FastifyInstance, ctx: OAuthContext): void {
  app.get('/signin', async (request, reply) => {
    const q = queryOf(request)
    let returnTo: string
    try { returnTo = safeReturnTo(q.get('return_to')) } catch { returnTo = '/account' }
    const existing = await ctx.sessions.lookup(request)
    if (existing?.profile_id != null) return await reply.header('cache-control', 'no-store').redirect(returnTo, 303)
    const session = existing ?? ctx.sessions.start(reply, null)
    // Where sessions are shared (the hub's instances), the form's POST may reach another instance.
    await ctx.sessions.flushed()
    return await sendPage(reply, 200, 'Sign in', signInBody(session.csrf, returnTo))
  })

  app.post('/signin', async (request, reply) => {
    const form = await pageForm(request, reply)
    if (form === null) return reply
    if (!await csrfOk(ctx, request, reply, form)) return reply
    const session = await ctx.sessions.lookup(request)
    let username: string, password: string, returnTo: string
    try {
      username = form.get('username') ?? ''
      password = form.get('password') ?? ''
      returnTo = safeReturnTo(form.get('return_to'))
    } catch {
      return await errorPage(reply, 400, 'Bad request', 'A field of the form was given more than once.')
    }
    const keys = [`ip:${request.ip}`, `user:${username.toLowerCase()}`]
    // Reserved before the (slow, asynchronous) password check, so a parallel burst is counted too.
    const attempt = await ctx.signInAttempts.reserve(keys)
    if (attempt === null) {
      reply.header('retry-after', String(await ctx.signInAttempts.retryAfter(keys)))
      return await errorPage(reply, 429, 'Too many attempts', 'Too many failed sign-in attempts. Wait a minute and try again.')
    }
    const user = username.length > 0 && username.length <= 100 && password.length > 0 && password.length <= 1024
      ? await ctx.users.authenticate(username, password)
      : undefined
    if (user === undefined) {
      ctx.log.info({ ip: request.ip }, 'sign-in failed')
      return await sendPage(reply, 401, 'Sign in', signInBody(session?.csrf ?? '', returnTo, 'Wrong username or password.'))
    }
    attempt.succeeded()
    ctx.sessions.start(reply, user.profile_id, session)
    await ctx.sessions.flushed()
    ctx.log.info({ profile_id: user.profile_id }, 'signed in')
    return await reply.header('cache-control', 'no-store').redirect(returnTo, 303)
  })

  app.post('/signout', async (request, reply) => {
    const form = await pageForm(request, reply)
    if (form === null) return reply
    if (!await csrfOk(ctx, request, reply, form)) return reply
    ctx.sessions.end(reply, await ctx.sessions.lookup(request))
    await ctx.sessions.flushed()
    return await reply.redirect('/signin', 303)
  })
}
