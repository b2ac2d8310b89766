// The "Errors" table of docs/api.md and the code's table (api/errors.ts) say the
// same thing, and every code in the table is one the server can send: it is
// named somewhere in api/ or relay/ outside the tables, in a file that makes
// ApiErrors. Both directions: a documented row the table lacks, or a table entry
// the documentation lacks, fails; so does an entry nothing sends.
import t from 'tap'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { API_ERRORS } from '../../api/errors.ts'

const root = new URL('../../', import.meta.url).pathname

async function sources (dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(join(root, dir), { withFileTypes: true })) {
    const rel = join(dir, e.name)
    if (e.isDirectory()) out.push(...await sources(rel))
    else if (/\.(ts|js)$/.test(e.name)) out.push(rel)
  }
  return out
}

t.test('the error table of docs/api.md lists exactly the codes of api/errors.ts', async t => {
  const readme = await readFile(join(root, 'docs', 'api.md'), 'utf8')
  const start = readme.indexOf('\n## Errors\n')
  t.ok(start > 0, 'docs/api.md has an "Errors" section')
  const section = readme.slice(start + 1, readme.indexOf('\n#', start + 2))
  const rows = [...section.matchAll(/^\| (\d{4}) \| ([a-z0-9_]+) \| (\d{3}) \|/gm)].map(m => `${m[1]} ${m[2]} ${m[3]}`)
  const lines = section.split('\n').filter(l => l.startsWith('|') && !l.startsWith('| code |') && !l.startsWith('|---'))
  t.equal(rows.length, lines.length, 'every row of the table has the form | code | error_message | HTTP | when |')
  const table = Object.values(API_ERRORS).map(d => `${d.code} ${d.message} ${d.status}`)
  t.same([...rows].sort(), [...table].sort(), 'same (code, error_message, HTTP status) rows')
  t.equal(new Set(rows).size, rows.length, 'no row twice')
})

t.test('every code in the table is used by the server', async t => {
  // The tables themselves do not count (api/error-codes.ts names API errors as the answers of internal
  // errors); a name counts only in a file that makes ApiErrors, so that the same word used for something
  // else ('conflict', 'processing') does not hide an unused entry.
  const tables = new Set([join('api', 'errors.ts'), join('api', 'error-codes.ts')])
  const files = [...await sources('api'), ...await sources('relay')].filter(f => !tables.has(f))
  const texts = (await Promise.all(files.map(async f => await readFile(join(root, f), 'utf8')))).filter(text => text.includes('ApiError'))
  const unused = Object.keys(API_ERRORS).filter(name => !texts.some(text => text.includes(`'${name}'`)))
  t.same(unused, [], 'no entry that nothing sends')
})
