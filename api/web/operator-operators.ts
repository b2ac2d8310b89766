// /operator/operators (owners only): the operator accounts, adding one (name, role, password) and removing one.
// The last owner cannot be removed. Passwords are only ever stored as scrypt hashes (api/store/operators.ts).
import type { FastifyInstance, FastifyReply } from 'fastify'
import { OperatorError, operatorsOf, type OperatorRole } from '../store/operators.ts'
import type { Session } from '../oauth/session.ts'
import { esc, field, notice, postForm, sendPage, table, when } from './html.ts'
import { one } from './guard.ts'
import { operatorNav } from './nav.ts'
import { operatorForm, operatorPage, type OperatorUses } from './operator-auth.ts'

const DONE: Record<string, string> = { added: 'Operator added.', removed: 'Operator removed.' }

export async function operatorAccountRoutes (app: FastifyInstance, uses: OperatorUses): Promise<void> {
  const operators = operatorsOf(uses.store)
  const page = async (reply: FastifyReply, session: Session, status: number, message?: string, error?: string): Promise<FastifyReply> => {
    const rows = (await operators.list()).map(o => [esc(o.name), esc(o.role), esc(when(o.created_at)),
      postForm(`/operator/operators/${encodeURIComponent(o.name)}/remove`, session.csrf, `<button type="submit" class="danger" aria-label="Remove ${esc(o.name)}">Remove</button>`, 'class="inline"')])
    const body = `${notice(message)}${notice(error, 'error')}
${table('Operators', ['Name', 'Role', 'Added', ''], rows, 'No operator accounts yet: you signed in with the admin token.')}
${postForm('/operator/operators', session.csrf, `<fieldset><legend>Add an operator</legend>
${field('op-name', 'Name', '<input type="text" id="op-name" name="name" required maxlength="64" autocomplete="off">')}
${field('op-role', 'Role', '<select id="op-role" name="role"><option value="coach">coach (rooms and displays)</option><option value="owner">owner (everything)</option></select>')}
${field('op-password', 'Password (10 characters or more)', '<input type="password" id="op-password" name="password" required minlength="10" maxlength="200" autocomplete="new-password">')}
<button type="submit">Add operator</button></fieldset>`)}`
    return await sendPage(reply.header('cache-control', 'no-store'), status, 'Operators', body, operatorNav(session.csrf, '/operator/operators'))
  }

  app.get<{ Querystring: { done?: string } }>('/operator/operators', async (request, reply) => {
    const session = await operatorPage(uses, request, reply)
    if (session === null) return reply
    return await page(reply, session, 200, DONE[request.query.done ?? ''])
  })

  app.post('/operator/operators', async (request, reply) => {
    const f = await operatorForm(uses, request, reply)
    if (f === null) return reply
    try {
      await operators.add(one(f.form, 'name'), one(f.form, 'role') as OperatorRole, one(f.form, 'password'))
    } catch (err) {
      if (err instanceof OperatorError) return await page(reply, f.session, err.reason === 'exists' ? 409 : 400, undefined, err.message)
      throw err
    }
    return await reply.redirect('/operator/operators?done=added', 303)
  })

  app.post<{ Params: { name: string } }>('/operator/operators/:name/remove', async (request, reply) => {
    const f = await operatorForm(uses, request, reply)
    if (f === null) return reply
    try {
      await operators.remove(request.params.name)
    } catch (err) {
      if (err instanceof OperatorError) return await page(reply, f.session, err.reason === 'not_found' ? 404 : 409, undefined, err.message)
      throw err
    }
    return await reply.redirect('/operator/operators?done=removed', 303)
  })
}
