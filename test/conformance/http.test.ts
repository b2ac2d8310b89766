// The Ingest side of the conformance suite for the HTTP write route
// (POST /api/v1/data), over a real Fastify listen of the whole service (one
// per file). HTTP is not a lifecycle Source (relay/sources/source.ts says
// why): the suite checks what the route owes Ingest. Each subtest gives the
// route its own recording Ingest in place of the pipeline's submit.
import t from 'tap'
import { startTestService } from '../helpers/service.ts'
import { ingestSuite } from './source.ts'
import type { IngestResult, Reading } from '../../api/pipeline/reading.ts'

const s = await startTestService(t)
await s.user('writer')
const token = await s.token('writer', 'data:heart_rate:write')
// The route holds the pipeline it was registered with, so each rig swaps that
// pipeline's submit for the recording Ingest's, and puts it back afterwards.
const pipeline = s.service.services.pipeline as unknown as { submit: (r: Reading) => Promise<IngestResult> }
const realSubmit = pipeline.submit

async function post (body: unknown): Promise<{ status: number, json: unknown }> {
  const res = await fetch(`${s.url}/api/v1/data`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
  return { status: res.status, json: await res.json() }
}

ingestSuite(t, {
  name: 'http',
  async rig (t, ingest) {
    pipeline.submit = async r => await ingest.submit(r)
    t.teardown(() => { pipeline.submit = realSubmit })
    return {
      async send (bpm) {
        const res = await post({ measured_at: Date.now(), data: { heart_rate: bpm } })
        if (res.status === 200) return true
        if (res.status === 400) return false
        throw new Error(`unexpected ${res.status} ${JSON.stringify(res.json)}`)
      },
      async bad () {
        const res = await post({ measured_at: Date.now(), data: { heart_rate: 'fast' } })
        if (res.status !== 400) throw new Error(`bad frame answered ${res.status}`)
        const body = res.json as { error_code?: unknown, error_message?: unknown }
        if (body.error_code !== 7013 || body.error_message !== 'invalid_request') throw new Error(`not the spec's invalid_request body: ${JSON.stringify(body)}`)
      }
    }
  }
})
