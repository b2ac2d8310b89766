// Why a scenario did not produce figures. A missing dependency (a route, a
// module or a CLI command another part of hr-relay has not delivered yet) is
// reported as such and never replaced by made-up numbers.

export class DependencyMissing extends Error {
  constructor (readonly what: string, detail: string) {
    super(`dependency missing: ${what}: ${detail}`)
    this.name = 'DependencyMissing'
  }
}

export class BenchFailure extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'BenchFailure'
  }
}
