// Two builds or settings of hr-relay against each other beside the CPU hog, in paired rounds with bare Aedes: the
// contention rows of e2e-latency, with a second hr-relay in every round. One round's ratio against bare Aedes moves
// by a factor of several with the machine; A and B, measured back to back in the same rounds, see the same machine.
// Even so one round's B / A is noisy, even with the same build on both sides: read the geometric mean over 8
// rounds or more, and take a difference for real only well beyond what the same build against itself shows.
//
//   AB_A_ENTRY=/tmp/old/dist/relay/cli-entry.js AB_B_ENTRY=$PWD/dist/relay/cli-entry.js \
//     node --import ./scripts/ts-loader.mjs bench/tools/ab-contention.ts [devices] [rounds] [window ms]
//
// AB_A_ENTRY and AB_B_ENTRY are compiled builds to start each side from (`npm run build` in a worktree of the other
// commit, with this tree's node_modules linked in); without one a side starts from bin/hr-relay.cjs. AB_A and AB_B
// are environment assignments (space-separated) for each side's server. The defaults are 2,000 devices, 8 rounds
// and 5 s windows; AB_HOG=0 measures the same rounds without the hog. The order of the three sides turns round
// every round, and A and B swap every second round, so that neither always follows the other.
import { fleet } from '../lib/fleet.ts'
import { Worker } from '../lib/proc.ts'
import { fmt } from '../lib/stats.ts'
import { environmentAssignments } from '../lib/unit-env.ts'
import { alone, openAedes, openHrRelay, type Measured, type Placement, type RefDelivery, type Side } from '../e2e-latency.ts'

/** A side's server: its environment, and the compiled build it starts from (a build's relay/cli-entry.js), if given. */
const placementOf = (env: string | undefined, entry: string | undefined): Placement => ({ env: environmentAssignments(env ?? ''), ...(entry === undefined || entry === '' ? {} : { compiledEntry: entry }) })

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

async function main (): Promise<void> {
  const n = Number(process.argv[2] ?? 2000)
  const rounds = Number(process.argv[3] ?? 8)
  const windowMs = Number(process.argv[4] ?? 5000)
  const log = (line: string): void => { process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`) }
  const ctx = { quick: false, log }
  await fleet(n, log)
  const gens = await Promise.all([0, 1, 2].map(async () => await Worker.start('workers/mqtt-devices.ts')))
  const [ga, gb, gr] = gens as [Worker, Worker, Worker]
  const opened: Array<Side<unknown>> = []
  const hog = process.env.AB_HOG !== '0'
  const rows: Array<{ a: Measured, b: Measured, r: RefDelivery }> = []
  try {
    const a = await openHrRelay(ctx, ga, n, placementOf(process.env.AB_A, process.env.AB_A_ENTRY))
    opened.push(a)
    const b = await openHrRelay(ctx, gb, n, placementOf(process.env.AB_B, process.env.AB_B_ENTRY))
    opened.push(b)
    const r = await openAedes(gr, n)
    opened.push(r)
    const all: Array<Side<unknown>> = [a, b, r]
    for (let i = 0; i < rounds; i++) {
      const ab = i % 4 < 2 ? [a, b] : [b, a]
      const order: Array<Side<unknown>> = i % 2 === 0 ? [...ab, r] : [r, ...ab]
      const got = new Map<Side<unknown>, unknown>()
      for (const side of order) got.set(side, await alone(side, all, windowMs, { hog }))
      const row = { a: got.get(a) as Measured, b: got.get(b) as Measured, r: got.get(r) as RefDelivery }
      rows.push(row)
      const pa = row.a.d.summary.p99
      const pb = row.b.d.summary.p99
      const pr = row.r.summary.p99
      log(`round ${i + 1}/${rounds} (${order.map(s => s === a ? 'A' : s === b ? 'B' : 'R').join('')}): p99 A ${fmt(pa)} B ${fmt(pb)} R ${fmt(pr)} ms; A/R ${(pa / pr).toFixed(2)}x B/R ${(pb / pr).toFixed(2)}x B/A ${(pb / pa).toFixed(3)}; lost A ${row.a.d.lost} B ${row.b.d.lost} R ${row.r.lost}`)
    }
  } finally {
    for (const side of opened) await side.close()
    for (const g of gens) await g.stop()
  }
  const ar = rows.map(x => x.a.d.summary.p99 / x.r.summary.p99)
  const br = rows.map(x => x.b.d.summary.p99 / x.r.summary.p99)
  const ba = rows.map(x => x.b.d.summary.p99 / x.a.d.summary.p99)
  const geo = Math.exp(ba.reduce((s, x) => s + Math.log(x), 0) / ba.length)
  log(`${n} devices, ${rounds} rounds${hog ? ' beside the hog' : ' without the hog'}: median A/R ${median(ar).toFixed(2)}x, B/R ${median(br).toFixed(2)}x; B/A median ${median(ba).toFixed(3)}, geometric mean ${geo.toFixed(3)}, B faster in ${ba.filter(x => x < 1).length} of ${rounds}; p50 A ${fmt(median(rows.map(x => x.a.d.summary.p50)))} B ${fmt(median(rows.map(x => x.b.d.summary.p50)))} ms`)
}

main().then(() => process.exit(0), (err: unknown) => { process.stderr.write(`${String((err as Error).stack ?? err)}\n`); process.exit(1) })
