// A port the service needs cannot be opened. The message names the listener,
// the address and the port, and `hr-relay start` exits 1 with it, so that
// systemd's Restart=on-failure sees the failure.
import { relayErrorMessage } from './error-codes.ts'
const REASONS: Record<string, string> = {
  EADDRINUSE: 'the port is already in use by another process',
  EACCES: 'permission denied (ports below 1024 need CAP_NET_BIND_SERVICE)',
  EADDRNOTAVAIL: 'the address is not one of this machine\'s',
  ENOTFOUND: 'the host name does not resolve'
}

export class ListenError extends Error {
  readonly code = 'HR_LISTEN'
  readonly port: number
  constructor (what: string, host: string, port: number, options?: { cause?: unknown }) {
    const code = (options?.cause as NodeJS.ErrnoException | undefined)?.code ?? ''
    const why = REASONS[code] ?? (options?.cause as Error | undefined)?.message ?? 'unknown error'
    super(relayErrorMessage('HR_LISTEN', { what, port, host, why: `${why}${code === '' ? '' : ` [${code}]`}` }), options)
    this.name = 'ListenError'
    this.port = port
  }
}
