// Stream.sendFrame (api/http/stream-socket.ts): a message framed once and
// written to the socket as it is arrives as ws's own send would deliver it,
// at every length form of the frame header, in order with messages ws sends.
import t from 'tap'
import { WebSocketServer, WebSocket } from 'ws'
import { openStream, textFrame } from '../../../api/http/stream-socket.ts'

t.test('the three length forms of a text frame header', async t => {
  t.same([...textFrame(Buffer.from('ab'))], [0x81, 2, 0x61, 0x62])
  const mid = textFrame(Buffer.alloc(300, 0x61))
  t.same([...mid.subarray(0, 4)], [0x81, 126, 0x01, 0x2c])
  t.equal(mid.length, 304)
  const big = textFrame(Buffer.alloc(70_000, 0x61))
  t.same([...big.subarray(0, 10)], [0x81, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70])
  t.equal(big.length, 70_010)
})

t.test('frames written to the socket reach a ws client whole and in order with ws\'s own sends', async t => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  t.teardown(() => { for (const c of wss.clients) c.terminate(); wss.close() })
  await new Promise<void>(resolve => { wss.once('listening', resolve) })
  const port = (wss.address() as { port: number }).port
  const serverSide = new Promise<WebSocket>(resolve => { wss.once('connection', resolve) })
  const client = new WebSocket(`ws://127.0.0.1:${port}/`)
  const got: Array<{ text: string, binary: boolean }> = []
  const all = new Promise<void>(resolve => {
    client.on('message', (data: Buffer, binary: boolean) => { got.push({ text: data.toString(), binary }); if (got.length === 4) resolve() })
  })
  const stream = openStream(await serverSide)
  await new Promise<void>(resolve => { client.once('open', resolve) })
  const payloads = ['{"heart_rate":71}', 'x'.repeat(300), 'y'.repeat(70_000)].map(s => Buffer.from(s))
  t.equal(stream.sendFrame(textFrame(payloads[0] as Buffer), payloads[0] as Buffer), true)
  t.equal(stream.send('through ws'), true)
  t.equal(stream.sendFrame(textFrame(payloads[1] as Buffer), payloads[1] as Buffer), true)
  t.equal(stream.sendFrame(textFrame(payloads[2] as Buffer), payloads[2] as Buffer), true)
  await all
  t.same(got.map(g => g.binary), [false, false, false, false], 'text frames')
  t.same(got.map(g => g.text.length), [17, 10, 300, 70_000])
  t.equal(got[0]?.text, '{"heart_rate":71}')
  t.equal(got[1]?.text, 'through ws')
  stream.close(1000, 'done')
  t.equal(stream.sendFrame(textFrame(payloads[0] as Buffer), payloads[0] as Buffer), false, 'nothing after close')
  client.close()
})
