// The documentation a person reads: the README stays a front door (short, the
// two commands on its first screen), every relative link of README.md and
// docs/*.md leads to a file that exists and, for a link into a Markdown file,
// to a heading or anchor that exists there; and the configuration table of
// docs/operator.md names exactly the keys of the configuration schema.
import t from 'tap'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONFIG_SCHEMA } from '../relay/config-schema.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter(f => f.endsWith('.md')).sort().map(f => `docs/${f}`)]
const read = (rel: string): string => readFileSync(join(ROOT, rel), 'utf8')

/** The text outside fenced code blocks, line for line (code lines become empty). */
function prose (markdown: string): string[] {
  let fenced = false
  return markdown.split('\n').map(line => {
    if (/^\s*```/.test(line)) { fenced = !fenced; return '' }
    return fenced ? '' : line
  })
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors (markdown: string): Set<string> {
  const out = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of prose(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading !== null) {
      const text = (heading[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '')
      const slug = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
      const n = seen.get(slug) ?? 0
      seen.set(slug, n + 1)
      out.add(n === 0 ? slug : `${slug}-${n}`)
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1] as string)
  }
  return out
}

/** Relative link targets of a Markdown file, with the line they are on (inline code and code blocks left out). */
function relativeLinks (markdown: string): Array<{ target: string, line: number }> {
  const out: Array<{ target: string, line: number }> = []
  prose(markdown).forEach((line, i) => {
    const text = line.replace(/`[^`]*`/g, '')
    for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1] as string
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) out.push({ target, line: i + 1 })
    }
  })
  return out
}

t.test('the README is a front door: at most 300 lines, the two commands on its first screen', async t => {
  const readme = read('README.md')
  const lines = readme.split('\n')
  t.ok(lines.length <= 300, `README.md has ${lines.length} lines (at most 300)`)
  const firstScreen = lines.slice(0, 25).join('\n')
  t.match(firstScreen, 'npm install && npm start', 'npm install && npm start in the first 25 lines')
  t.match(firstScreen, /^npm test\b/m, 'npm test in the first 25 lines')
})

t.test('the reference is in docs/, one file per reader', async t => {
  t.same(DOCS.filter(f => f.startsWith('docs/')), ['docs/api.md', 'docs/architecture.md', 'docs/classes.md', 'docs/hub.md', 'docs/integrations.md', 'docs/mqtt-and-firmware.md', 'docs/operator.md', 'docs/scaling.md'])
})

t.test('every relative link of README.md and docs/*.md leads to an existing file and anchor', async t => {
  let checked = 0
  for (const file of DOCS) {
    const text = read(file)
    for (const { target, line } of relativeLinks(text)) {
      checked++
      const [path = '', anchor] = target.split('#') as [string, string | undefined]
      const resolved = path === '' ? file : relative(ROOT, join(ROOT, dirname(file), decodeURIComponent(path)))
      const where = `${file}:${line} → ${target}`
      const stat = statSync(join(ROOT, resolved), { throwIfNoEntry: false })
      if (stat === undefined) { t.fail(`${where}: ${resolved} does not exist`); continue }
      if (anchor !== undefined && resolved.endsWith('.md')) {
        t.ok(anchors(read(resolved)).has(anchor), `${where}: ${resolved} has the anchor #${anchor}`)
      } else {
        t.pass(where)
      }
    }
  }
  t.ok(checked > 50, `links checked: ${checked}`)
})

t.test('the anchor rule follows GitHub for the headings these files use', async t => {
  const a = anchors('# OAuth 2.0 and tokens\n## 4. MIDI (spec §4.8)\n### Errors\n### Errors\n```\n# not a heading\n```\n<a id="x-y"></a>\n## `hr-relay` extensions: history, sessions')
  t.same([...a], ['oauth-20-and-tokens', '4-midi-spec-48', 'errors', 'errors-1', 'x-y', 'hr-relay-extensions-history-sessions'])
  t.same(relativeLinks('[a](b.md#c) `[x](nope.md)` [web](https://x.example) [s](#self)\n```\n[in](code.md)\n```'), [{ target: 'b.md#c', line: 1 }, { target: '#self', line: 1 }])
})

/** Keys of earlier versions that the schema still accepts, ignored with a warning at start; documented as such, not in the table. */
const IGNORED_KEYS = new Set(['data.journal_mb', 'data.sync_below_per_s'])

/** Every configuration key: `a.b` for nested objects, `list[]` for lists of objects (their items are described in one row). */
function schemaKeys (schema: unknown, prefix = ''): string[] {
  const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {}
  return Object.entries(properties).flatMap(([key, value]) => {
    const path = prefix + key
    const v = value as { type?: string, properties?: unknown, items?: { properties?: unknown } }
    if (v.type === 'array') return [v.items?.properties === undefined ? path : `${path}[]`]
    if (v.properties !== undefined) return [path, ...schemaKeys(v, `${path}.`)]
    return [path]
  })
}

t.test('the configuration table of docs/operator.md names exactly the schema\'s keys', async t => {
  const text = read('docs/operator.md')
  const start = text.indexOf('\n## Configuration\n')
  t.ok(start > 0, 'docs/operator.md has a "Configuration" section')
  const section = text.slice(start + 1, text.indexOf('\n## ', start + 2))
  const rows = section.split('\n').filter(l => l.startsWith('| `'))
  const documented = rows.flatMap(row => [...(row.split(' | ')[0] as string).matchAll(/`([^`]+)`/g)].map(m => m[1] as string))
  const keys = schemaKeys(JSON.parse(JSON.stringify(CONFIG_SCHEMA)))
  const objects = new Set(keys.filter(k => keys.some(other => other.startsWith(`${k}.`))))
  /** A documented name covers a key: the same name, `obj.*` for every key of obj, or an object named as a whole. */
  const covers = (name: string, key: string): boolean =>
    name === key || (name.endsWith('.*') && key.startsWith(name.slice(0, -1))) || (objects.has(name) && key.startsWith(`${name}.`))
  const undocumented = keys.filter(k => !objects.has(k) && !IGNORED_KEYS.has(k) && !documented.some(name => covers(name, k)))
  t.same(undocumented, [], 'every configuration key is in the table')
  const unknown = documented.filter(name => !keys.some(k => covers(name, k)))
  t.same(unknown, [], 'every key in the table is in the schema')
  const listed = documented.filter(name => IGNORED_KEYS.has(name))
  t.same(listed, [], 'ignored keys are not in the table')
  for (const key of IGNORED_KEYS) t.match(section, `\`${key}\``, `${key} is named as ignored`)
})
