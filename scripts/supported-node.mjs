// `npm test` and `npm run bench` run on Node 24 LTS (engines: >=22). On an older node (Debian 12's is 20, past its
// end of life) the script runs itself again under the Node 24 that scripts/node24.sh installs from the npm
// registry into a cache folder, with that node first on the PATH of every process it starts.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** Returns on a supported node; otherwise runs `script` again under Node 24 and exits with its status. */
export function onSupportedNode (script, label) {
  if (Number(process.versions.node.split('.')[0]) >= 22) return
  const found = spawnSync('bash', [fileURLToPath(new URL('./node24.sh', import.meta.url))], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' })
  if (found.status !== 0) { console.error(`${label}: no Node 22 or newer, and Node 24 could not be installed`); process.exit(1) }
  const bin = found.stdout.trim()
  console.log(`${label}: node ${process.version} is past its end of life; running on ${bin}/node`)
  const again = spawnSync(`${bin}/node`, [fileURLToPath(script), ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } })
  process.exit(again.status ?? 1)
}
