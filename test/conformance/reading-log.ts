// The reading log conformance suite: the contract of ReadingLog
// (api/store/reading-log.ts), which makes acknowledged readings durable. A
// backend passes it by calling readingLogConformance(t, factory) with a factory
// that opens its log on an empty location of its own; the LevelDB backend runs
// it from test/api/store/reading-log.test.ts. What a power cut does to the log
// is tested per backend (test/api/store/power-cut.test.ts for LevelDB).
import type { Test } from 'tap'
import type { ReadingLog } from '../../api/store/reading-log.ts'
import type { WriteOp } from '../../api/store/types.ts'

export interface ReadingLogHandle {
  /** The open log (a new one after reopen). */
  readonly log: ReadingLog
  /** An op that stores `value` at `key`, in the backend's own terms. */
  put (key: string, value: string): WriteOp
  /** An op that deletes `key`. */
  del (key: string): WriteOp
  /** An op that the backend refuses when it writes it (a value it cannot store), failing its whole group. */
  refused (key: string): WriteOp
  /** The value stored at `key`, read from the backend (undefined: none). */
  get (key: string): Promise<string | undefined>
  /** The values stored at `keys`, all read from one consistent view of the backend (a snapshot or a transaction). */
  getConsistent (keys: string[]): Promise<Array<string | undefined>>
  /** Closes the backend; the log is then closed too. */
  close (): Promise<void>
  /** Closes the backend if open, and opens the same location again. */
  reopen (): Promise<void>
  /** Closes the backend if open and removes the location. */
  destroy (): Promise<void>
}

export type ReadingLogFactory = () => Promise<ReadingLogHandle>

export function readingLogConformance (t: Test, factory: ReadingLogFactory): void {
  const open = async (t: Test): Promise<ReadingLogHandle> => {
    const h = await factory()
    t.teardown(async () => { await h.destroy() })
    return h
  }
  const values = async (h: ReadingLogHandle, keys: string[]): Promise<Array<string | undefined>> => await Promise.all(keys.map(async k => await h.get(k)))

  t.test('an append resolves once every op of its group is stored', async t => {
    const h = await open(t)
    await h.log.append([h.put('a', '1'), h.put('b', '2'), h.put('c', '3')])
    t.same(await values(h, ['a', 'b', 'c']), ['1', '2', '3'])
    await h.log.append([h.del('b'), h.put('c', '4')])
    t.same(await values(h, ['a', 'b', 'c']), ['1', undefined, '4'], 'a delete and an overwrite in one group')
  })

  t.test('an empty group resolves and changes nothing', async t => {
    const h = await open(t)
    await h.log.append([h.put('a', '1')])
    await h.log.append([])
    t.same(await values(h, ['a']), ['1'])
  })

  t.test('appends called without waiting take effect and settle in the order they were called', async t => {
    const h = await open(t)
    const settled: number[] = []
    const appends = Array.from({ length: 20 }, async (_, i) => {
      await h.log.append([h.put('same', String(i)), h.put(`k${i}`, String(i))])
      settled.push(i)
    })
    await Promise.all(appends)
    t.same(settled, Array.from({ length: 20 }, (_, i) => i), 'each resolved after the one called before it')
    t.equal(await h.get('same'), '19', 'the last call wins')
    t.same(await values(h, Array.from({ length: 20 }, (_, i) => `k${i}`)), Array.from({ length: 20 }, (_, i) => String(i)), 'every group stored')
  })

  t.test('a group with an op the backend refuses rejects, and stores nothing of that group', async t => {
    const h = await open(t)
    await h.log.append([h.put('a', '1'), h.put('b', '2')])
    await t.rejects(h.log.append([h.put('a', 'changed'), h.del('b'), h.put('new', 'x'), h.refused('bad')]))
    t.same(await values(h, ['a', 'b', 'new', 'bad']), ['1', '2', undefined, undefined], 'none of its puts nor deletes')
    await h.reopen()
    t.same(await values(h, ['a', 'b', 'new', 'bad']), ['1', '2', undefined, undefined], 'nor after a reopen')
  })

  t.test('a failed append between others fails alone', async t => {
    const h = await open(t)
    const results = await Promise.allSettled([
      h.log.append([h.put('a', '1')]),
      h.log.append([h.put('b', '2'), h.refused('bad')]),
      h.log.append([h.put('c', '3')])
    ])
    t.same(results.map(r => r.status), ['fulfilled', 'rejected', 'fulfilled'])
    t.same(await values(h, ['a', 'b', 'c']), ['1', undefined, '3'])
  })

  t.test('a group is all there or not there: readers never see part of it', async t => {
    const h = await open(t)
    const keys = Array.from({ length: 200 }, (_, i) => `g${String(i).padStart(3, '0')}`)
    const writing = h.log.append(keys.map(k => h.put(k, 'v')))
    // Read the first and the last key from one view while the group is being written: both or neither.
    // (Two separate reads could fall on either side of the write and prove nothing about it.)
    let done = false
    void writing.then(() => { done = true }, () => { done = true })
    let reads = 0
    let torn = 0
    while (!done) {
      const [first, last] = await h.getConsistent([keys[0]!, keys[keys.length - 1]!])
      if ((first === undefined) !== (last === undefined)) torn++
      reads++
    }
    await writing
    t.equal(torn, 0, `the first and the last key: both or neither, in each of ${reads} reads during the write`)
    t.same(new Set(await values(h, keys)), new Set(['v']), 'all 200 after it resolved')
  })

  t.test('what an append resolved is there after a reopen', async t => {
    const h = await open(t)
    for (let i = 0; i < 50; i++) await h.log.append([h.put(`r${i}`, String(i))])
    await h.reopen()
    t.same(await values(h, Array.from({ length: 50 }, (_, i) => `r${i}`)), Array.from({ length: 50 }, (_, i) => String(i)))
    await h.log.append([h.put('after', 'yes')])
    t.equal(await h.get('after'), 'yes', 'the reopened log appends')
  })

  t.test('an append after the backend is closed rejects, and stores nothing', async t => {
    const h = await open(t)
    await h.log.append([h.put('a', '1')])
    const closed = h.log
    const late = h.put('late', 'x')
    await h.close()
    await t.rejects(closed.append([late]))
    await h.reopen()
    t.same(await values(h, ['a', 'late']), ['1', undefined])
  })
}
