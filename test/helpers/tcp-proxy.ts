// A TCP forwarder between a client under test and its server, which can cut the link (as a network that drops
// a box off) and restore it. While cut, every connection is destroyed and new ones are closed at once.
import net from 'node:net'

interface Tap { teardown (fn: () => unknown): void }

export class TcpProxy {
  private readonly pairs = new Set<[net.Socket, net.Socket]>()
  private isCut = false
  private readonly server: net.Server
  port = 0

  private constructor (targetPort: number, targetHost: string) {
    this.server = net.createServer(client => {
      if (this.isCut) { client.destroy(); return }
      const upstream = net.connect(targetPort, targetHost)
      const pair: [net.Socket, net.Socket] = [client, upstream]
      this.pairs.add(pair)
      const end = (): void => { client.destroy(); upstream.destroy(); this.pairs.delete(pair) }
      client.on('error', end); upstream.on('error', end)
      client.on('close', end); upstream.on('close', end)
      client.pipe(upstream); upstream.pipe(client)
    })
  }

  static async create (t: Tap, targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetPort, targetHost)
    await new Promise<void>(resolve => { proxy.server.listen(0, '127.0.0.1', () => { resolve() }) })
    proxy.port = (proxy.server.address() as net.AddressInfo).port
    t.teardown(async () => { proxy.cut(); await new Promise<void>(resolve => { proxy.server.close(() => { resolve() }) }) })
    return proxy
  }

  get url (): string { return `mqtt://127.0.0.1:${this.port}` }

  cut (): void {
    this.isCut = true
    for (const [a, b] of this.pairs) { a.destroy(); b.destroy() }
    this.pairs.clear()
  }

  restore (): void { this.isCut = false }
}
