// Lint: neostandard (the style Fastify uses) with its TypeScript rules, which
// matches shared/STYLE.md: no semicolons, single quotes, a space before a
// function's parentheses. A few rules are off because the code uses what they
// forbid on purpose: `void promise` marks a promise deliberately not awaited;
// short objects stay on one line even when one property spans several;
// `for await (…) return first` reads the first entry of an iterator and
// closes it; a loop condition changed by an awaited callback is not
// "unmodified"; promise executors name their parameters by what they do.
import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'node_modules/**', '.tap/**', 'test/artifacts/**', 'bench/results/**'] }),
  {
    rules: {
      'no-void': 'off',
      '@stylistic/object-property-newline': 'off',
      'no-unreachable-loop': 'off',
      'no-unmodified-loop-condition': 'off',
      'promise/param-names': 'off',
      // The wire format is snake_case (the specification's field names), and code that handles it keeps them.
      camelcase: 'off'
    }
  },
  {
    // `for await (const _ of it) n++` counts; a leading underscore says the value is unused on purpose.
    files: ['**/*.ts'],
    rules: { '@typescript-eslint/no-unused-vars': ['error', { args: 'none', varsIgnorePattern: '^_' }] }
  },
  {
    // Pages' scripts run in the browser.
    files: ['api/web/static/**/*.js'],
    languageOptions: { globals: { getComputedStyle: 'readonly', ResizeObserver: 'readonly', CSS: 'readonly' } }
  }
]
