// Lint: neostandard (the style Fastify uses) with its TypeScript rules, which
// matches shared/STYLE.md: no semicolons, single quotes, a space before a
// function's parentheses. Two rules are off because the code uses them on
// purpose: `void promise` marks a promise deliberately not awaited, and short
// objects stay on one line even when one of their properties spans several.
import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'node_modules/**', '.tap/**', 'test/artifacts/**', 'bench/results/**'] }),
  {
    rules: {
      'no-void': 'off',
      '@stylistic/object-property-newline': 'off'
    }
  }
]
