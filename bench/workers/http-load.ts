// Worker: autocannon (its programmatic API, the same code as its CLI) in its
// own process, kept for every run of a scenario so each measurement does not
// pay a node start. Returns autocannon's own result object (as its CLI's -j prints it).
// @ts-expect-error autocannon ships no type declarations
import autocannon from 'autocannon'
import { serve } from '../lib/proc.ts'

export interface LoadPlan { url: string, connections: number, durationS: number, amount?: number, headers?: Record<string, string> }

async function run (p: LoadPlan): Promise<unknown> {
  return await new Promise((resolve, reject) => {
    autocannon({
      url: p.url,
      connections: p.connections,
      pipelining: 1,
      headers: p.headers ?? {},
      ...(p.amount === undefined ? { duration: p.durationS } : { amount: p.amount })
    }, (err: Error | null, result: unknown) => { if (err !== null && err !== undefined) reject(err); else resolve(JSON.parse(JSON.stringify(result))) })
  })
}

serve({ run, reset: () => {} })
