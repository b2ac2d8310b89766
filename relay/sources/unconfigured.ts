// A configured input that cannot run as configured (an ANT stick without its
// network key): it opens nothing and reports 'unavailable' with the reason, so
// that /health, /metrics and the operator's devices page say what is missing
// while every other source runs.
import type { Logger } from 'pino'
import type { Source, SourceSink, SourceStatus } from './source.ts'

export class UnconfiguredSource implements Source {
  private current: SourceStatus

  constructor (readonly id: string, private readonly detail: string, private readonly log: Logger) {
    this.current = { state: 'unavailable', detail, connected: 0 }
  }

  async start (_signal: AbortSignal, sink: SourceSink): Promise<void> {
    this.log.error({ source: this.id }, this.detail)
    sink.status({ ...this.current })
  }

  async stop (): Promise<void> {
    this.current = { state: 'stopped', detail: this.detail, connected: 0 }
  }

  status (): SourceStatus { return { ...this.current } }
}
