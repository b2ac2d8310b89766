// GET /api/v1/data/heart_rate/history (hr-relay extension, docs/api.md "hr-relay extensions"): a profile's stored readings in [from, to) (Unix ms), oldest
// first, paged with an opaque cursor, at most MAX_RANGE_MS a request.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { guard, type GuardUses } from './data-auth.ts'
import type { Services } from '../services.ts'
import { profileOf } from './auth.ts'
import { MAX_TIMESTAMP } from '../pipeline/codec.ts'
import type { RawReading } from '../store/readings.ts'

export const MAX_RANGE_MS = 31 * 86_400_000
export const DEFAULT_LIMIT = 1000
export const MAX_LIMIT = 10_000

const DIGITS = /^\d{1,16}$/

const bad = (detail: string): ApiError => new ApiError('invalid_request', { detail })

function intParam (query: Record<string, unknown>, name: string, fallback?: number): number {
  const v = query[name]
  if (v === undefined && fallback !== undefined) return fallback
  if (typeof v !== 'string' || !DIGITS.test(v)) throw bad(`${name} must be a non-negative integer`)
  return Number(v)
}

/** `from` (inclusive) and `to` (exclusive) in Unix ms: both given, from <= to, at most 31 days apart. */
export function rangeOf (query: unknown): { from: number, to: number } {
  const q = (query ?? {}) as Record<string, unknown>
  const from = intParam(q, 'from')
  const to = intParam(q, 'to')
  if (from > MAX_TIMESTAMP || to > MAX_TIMESTAMP + 1) throw bad('from and to must be Unix milliseconds')
  if (from > to) throw bad('from must not be after to')
  if (to - from > MAX_RANGE_MS) throw bad('at most 31 days a request')
  return { from, to }
}

/** The cursor is base64url of the last returned measured_at (opaque to clients). */
export function encodeCursor (measuredAt: number): string {
  return Buffer.from(String(measuredAt), 'utf8').toString('base64url')
}

export function decodeCursor (cursor: string): number | undefined {
  if (!/^[A-Za-z0-9_-]{1,24}$/.test(cursor)) return undefined
  const text = Buffer.from(cursor, 'base64url').toString('utf8')
  if (!/^\d{1,13}$/.test(text) || encodeCursor(Number(text)) !== cursor) return undefined
  return Number(text)
}

export interface HistoryReading { measured_at: number, heart_rate: number, rr_intervals_ms?: number[], energy_expended_kj?: number }

export function historyReading (r: RawReading): HistoryReading {
  return {
    measured_at: r.measured_at,
    heart_rate: r.heart_rate,
    ...(r.rr_intervals_ms === undefined || r.rr_intervals_ms.length === 0 ? {} : { rr_intervals_ms: r.rr_intervals_ms }),
    ...(r.energy_expended_kj === undefined ? {} : { energy_expended_kj: r.energy_expended_kj })
  }
}

const str = Type.Optional(Type.String())

/** What the history uses: the stored readings. */
export type HistoryUses = GuardUses & Pick<Services, 'readings'>

export const historyPlugin: FastifyPluginAsyncTypebox<HistoryUses> = async (app, uses) => {
  const { readings } = uses
  app.get('/api/v1/data/heart_rate/history', {
    onRequest: guard(uses, { scope: 'data:heart_rate:read' }),
    schema: {
      querystring: Type.Object({ from: str, to: str, limit: str, cursor: str }),
      response: {
        200: {
          type: 'object',
          additionalProperties: false,
          required: ['data', 'next_cursor'],
          properties: {
            data: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['measured_at', 'heart_rate'],
                properties: { measured_at: { type: 'number' }, heart_rate: { type: 'number' }, rr_intervals_ms: { type: 'array', items: { type: 'number' } }, energy_expended_kj: { type: 'number' } }
              }
            },
            next_cursor: { type: ['string', 'null'] }
          }
        }
      }
    }
  }, async request => {
    const q = request.query
    const { from, to } = rangeOf(q)
    const limit = intParam(q, 'limit', DEFAULT_LIMIT)
    if (limit < 1 || limit > MAX_LIMIT) throw bad(`limit must be 1..${MAX_LIMIT}`)
    let start = from
    if (q.cursor !== undefined) {
      const c = decodeCursor(q.cursor)
      if (c === undefined || c < from || c >= to) throw bad('cursor is not one this range returned')
      start = c + 1
    }
    let rows: RawReading[]
    try {
      rows = await readings.page(profileOf(request), start, to, limit + 1)
    } catch (err) {
      throw new ApiError('processing', { cause: err })
    }
    const more = rows.length > limit
    const data = rows.slice(0, limit).map(historyReading)
    const last = data[data.length - 1]
    return { data, next_cursor: more && last !== undefined ? encodeCursor(last.measured_at) : null }
  })
}
