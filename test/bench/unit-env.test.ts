// The footprint and pi-profile servers run with the unit's Environment= lines.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { unitEnvironment } from '../../bench/lib/unit-env.ts'

t.test('unitEnvironment reads the [Service] Environment= lines, quoted or not, later lines winning', async t => {
  const unit = [
    '[Unit]',
    'Environment=NOT_THIS=1',
    '[Service]',
    '# Environment=COMMENTED=1',
    'Environment=MALLOC_ARENA_MAX=4',
    'Environment="A=b c" D=e',
    'Environment=MALLOC_ARENA_MAX=2',
    'ExecStart=/usr/bin/node x.js',
    '[Install]',
    'WantedBy=multi-user.target'
  ].join('\n')
  t.same(unitEnvironment(unit), { MALLOC_ARENA_MAX: '2', A: 'b c', D: 'e' })
})

t.test('the shipped unit sets MALLOC_ARENA_MAX=2 and 1 MB semi-spaces', async t => {
  const unit = await readFile(fileURLToPath(new URL('../../deploy/hr-relay.service', import.meta.url)), 'utf8')
  t.same(unitEnvironment(unit), { MALLOC_ARENA_MAX: '2', NODE_OPTIONS: '--max-semi-space-size=1' })
})
