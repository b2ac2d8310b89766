// One keyed lock for every read-modify-write in the store: tasks that share a
// key (one aggregate: a room, a user's widgets, a token family, ...) run one
// after another; tasks of different keys run concurrently. Without it two
// concurrent requests read the same state, each writes its own change, and the
// later write silently undoes the earlier one (a lost update).
// The entry of a key is deleted when its last task ends, so the map holds only
// keys with work in progress.

/** Runs tasks for one key one after another (a failed task does not block the next). */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>()

  async run<T> (key: string, task: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve()
    const next = prev.then(task, task)
    const tail = next.catch(() => undefined)
    this.tails.set(key, tail)
    try {
      return await next
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }

  /** Keys with a task running or waiting (for tests: an idle lock holds nothing). */
  get size (): number { return this.tails.size }
}
