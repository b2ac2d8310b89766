// CSV export of a session: a header line, then one line per reading with its
// RR intervals as stored, separated by `;` (docs/api.md "hr-relay extensions").
import type { SessionReading } from '../sessions.ts'

export const CSV_HEADER = 'measured_at,heart_rate,rr_intervals_ms'

export function sessionCsv (readings: readonly SessionReading[]): string {
  const lines = [CSV_HEADER]
  for (const r of readings) lines.push(`${r.measured_at},${r.heart_rate},${(r.rr_intervals_ms ?? []).join(';')}`)
  return lines.join('\n') + '\n'
}
