import t from 'tap'
import { once } from 'node:events'
import { BoundedLineSplitter, ANY_DELIMITER, parseLine } from '../../firmware-protocol/serial.ts'

/** Write the chunks one by one, end the stream, and collect every line and overflow. */
async function run (chunks: Array<string | Buffer>, options?: ConstructorParameters<typeof BoundedLineSplitter>[0]): Promise<{ lines: string[], overflows: number, splitter: BoundedLineSplitter }> {
  const splitter = new BoundedLineSplitter(options)
  const lines: string[] = []
  let overflows = 0
  splitter.on('data', (line: string) => lines.push(line))
  splitter.on('overflow', () => { overflows++ })
  for (const chunk of chunks) splitter.write(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk)
  splitter.end()
  await once(splitter, 'end')
  return { lines, overflows, splitter }
}

t.test('splits LF and CR LF lines', async (t) => {
  const { lines, overflows } = await run(['$HR,72*33\n$HR,60*30\r\n72\n'])
  t.same(lines, ['$HR,72*33', '$HR,60*30', '72'])
  t.equal(overflows, 0)
})

t.test('a line split across chunks, one byte at a time', async (t) => {
  const text = '$HR,72,833,812*30\r\n$ID,hr-01,1.2.0*08\r\n'
  const { lines } = await run([...text])
  t.same(lines, ['$HR,72,833,812*30', '$ID,hr-01,1.2.0*08'])
  t.same(lines.map((l) => parseLine('framed', l).kind), ['reading', 'identity'])
})

t.test('CR LF split between chunks', async (t) => {
  const { lines } = await run(['$HR,72*33\r', '\n$HR,60*30\r', '\n'])
  t.same(lines, ['$HR,72*33', '$HR,60*30'])
})

t.test('a delimiter split from its line', async (t) => {
  const { lines } = await run(['$HR,7', '2*33', '\r', '\n', '72', '\n'])
  t.same(lines, ['$HR,72*33', '72'])
})

t.test('bare-CR delimiter (HRMI): CR, LF and CR LF all end a line, CR LF across chunks is one terminator', async (t) => {
  const { lines } = await run(['0 17 72\r', '\n', '0 18 73\r0 19 74\n0 20 75\r\n'], { delimiter: ANY_DELIMITER })
  t.same(lines, ['0 17 72', '0 18 73', '0 19 74', '0 20 75'])
  const noLf = await run(['0 17 72\r0 18 73\r'], { delimiter: ANY_DELIMITER })
  t.same(noLf.lines, ['0 17 72', '0 18 73'])
})

t.test('an over-long line is dropped with one overflow event and the next good line comes through', async (t) => {
  const junk = 'x'.repeat(1000)
  const chunks: string[] = []
  for (let i = 0; i < junk.length; i += 7) chunks.push(junk.slice(i, i + 7))
  const { lines, overflows, splitter } = await run([...chunks, 'yyy\r\n$HR,72*33\r\n'], { maxLength: 64 })
  t.same(lines, ['$HR,72*33'])
  t.equal(overflows, 1)
  t.equal(splitter.pendingLength, 0)
})

t.test('over-long lines inside a single chunk, twice', async (t) => {
  const long = 'B'.repeat(40)
  const { lines, overflows } = await run([`${long}\n72\n${long}\r\nBPM=80\n`], { maxLength: 32 })
  t.same(lines, ['72', 'BPM=80'])
  t.equal(overflows, 2)
})

t.test('a line of exactly maxLength passes, one more byte overflows', async (t) => {
  const ok = '7'.repeat(16)
  const { lines, overflows } = await run([ok + '\r', '\n', ok + '8\n', 'end\n'], { maxLength: 16 })
  t.same(lines, [ok, 'end'])
  t.equal(overflows, 1)
})

t.test('never buffers more than maxLength bytes while waiting for a newline', async (t) => {
  const splitter = new BoundedLineSplitter({ maxLength: 32 })
  let overflows = 0
  const lines: string[] = []
  splitter.on('overflow', () => { overflows++ })
  splitter.on('data', (l: string) => lines.push(l))
  let maxPending = 0
  for (let i = 0; i < 500; i++) {
    splitter.write(Buffer.alloc(100, 0x41))
    maxPending = Math.max(maxPending, splitter.pendingLength)
  }
  t.equal(maxPending, 0, 'discarding mode keeps nothing')
  splitter.write(Buffer.from('\nHR=90\n'))
  splitter.end()
  await once(splitter, 'end')
  t.equal(overflows, 1)
  t.same(lines, ['HR=90'])

  const partial = new BoundedLineSplitter({ maxLength: 32 })
  partial.write(Buffer.from('1234567890'))
  t.equal(partial.pendingLength, 10)
  partial.write(Buffer.from('1234567890123456789012'))
  t.equal(partial.pendingLength, 32)
  partial.end()
})

t.test('UTF-8 split inside a character is decoded whole', async (t) => {
  const bytes = Buffer.from('BPM=72 \u2665\n', 'utf8')
  const { lines } = await run([bytes.subarray(0, 8), bytes.subarray(8, 9), bytes.subarray(9)])
  t.same(lines, ['BPM=72 \u2665'])
})

t.test('an unterminated final line is flushed at end; blank lines are pushed as empty strings', async (t) => {
  const { lines } = await run(['72\n\n73'])
  t.same(lines, ['72', '', '73'])
  t.same(parseLine('text', ''), { kind: 'ignored' })
})

t.test('rejects a bad maxLength', async (t) => {
  t.throws(() => new BoundedLineSplitter({ maxLength: 0 }), RangeError)
})
