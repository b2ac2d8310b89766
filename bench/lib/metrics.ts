// Reads hr-relay's own ingest histogram from /metrics (Prometheus text):
// submit → durable write, as the pipeline measures it. Lets a scenario split
// an acknowledgement's latency into pipeline time and everything else.

export interface IngestHistogram { count: number, meanMs: number, buckets: Array<{ leMs: number, count: number }> }

/** Parses hr_relay_ingest_latency_seconds; undefined when the server does not export it. */
export function parseIngestHistogram (text: string): IngestHistogram | undefined {
  const name = 'hr_relay_ingest_latency_seconds'
  const num = (re: RegExp): number | undefined => { const m = re.exec(text); return m === null ? undefined : Number(m[1]) }
  const count = num(new RegExp(`^${name}_count(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm'))
  const sum = num(new RegExp(`^${name}_sum(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm'))
  if (count === undefined || sum === undefined) return undefined
  const buckets: IngestHistogram['buckets'] = []
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{[^}]*le="([0-9.e+-]+)"[^}]*\\} ([0-9.e+-]+)$`, 'gm'))) {
    buckets.push({ leMs: Number(m[1]) * 1000, count: Number(m[2]) })
  }
  return { count, meanMs: count === 0 ? 0 : (sum / count) * 1000, buckets }
}

/** The smallest bucket bound holding at least p % of the observations (an upper bound of the percentile). */
export function bucketPercentile (h: IngestHistogram, p: number): number {
  const want = (p / 100) * h.count
  for (const b of h.buckets) if (b.count >= want) return b.leMs
  return Number.POSITIVE_INFINITY
}

/** The observations between two scrapes of the same histogram. */
export function histogramBetween (before: IngestHistogram, after: IngestHistogram): IngestHistogram {
  const count = after.count - before.count
  const sumMs = after.meanMs * after.count - before.meanMs * before.count
  const buckets = after.buckets.map(b => ({ leMs: b.leMs, count: b.count - (before.buckets.find(x => x.leMs === b.leMs)?.count ?? 0) }))
  return { count, meanMs: count === 0 ? 0 : sumMs / count, buckets }
}

export async function ingestHistogram (httpUrl: string): Promise<IngestHistogram | undefined> {
  const res = await fetch(`${httpUrl}/metrics`)
  if (res.status !== 200) return undefined
  return parseIngestHistogram(await res.text())
}

/** The sum of a metric's samples over all its label sets; undefined when the text has none. */
export function metricSum (text: string, name: string): number | undefined {
  let total: number | undefined
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'gm'))) total = (total ?? 0) + Number(m[1])
  return total
}

/** Sum of hr_relay_readings_stored_total over its sources; undefined when the server does not export it. */
export function parseStoredTotal (text: string): number | undefined {
  return metricSum(text, 'hr_relay_readings_stored_total')
}

export async function storedTotal (httpUrl: string): Promise<number | undefined> {
  const res = await fetch(`${httpUrl}/metrics`)
  if (res.status !== 200) return undefined
  return parseStoredTotal(await res.text())
}

/** hr-relay's V8 heap (committed and used) and the memory outside it that V8 knows of, in bytes, from /metrics. */
export interface HeapScrape { total: number, used: number, external: number }

/** The heap gauges of prom-client's default metrics under hr-relay's prefix; undefined when the text has them not. */
export function parseHeap (text: string): HeapScrape | undefined {
  const total = metricSum(text, 'hr_relay_nodejs_heap_size_total_bytes')
  const used = metricSum(text, 'hr_relay_nodejs_heap_size_used_bytes')
  const external = metricSum(text, 'hr_relay_nodejs_external_memory_bytes')
  return total === undefined || used === undefined || external === undefined ? undefined : { total, used, external }
}

/** hr-relay's heap gauges from its /metrics; undefined when it does not answer them (a sample is skipped, not failed). */
export async function heapOf (httpUrl: string): Promise<HeapScrape | undefined> {
  try {
    const res = await fetch(`${httpUrl}/metrics`)
    return res.status === 200 ? parseHeap(await res.text()) : undefined
  } catch { return undefined }
}
