// The LevelDB backend as one Stores bundle (types.ts): one database in the
// data directory, the readings, users, devices, clients and tokens on its
// sublevels, its atomic batch and its reading log. What a second backend provides too; the
// store conformance suite (test/conformance/store.ts) opens it this way.
import { Store } from './db.ts'
import { Users } from './users.ts'
import { Devices } from './devices.ts'
import { Clients } from './clients.ts'
import { Tokens } from './tokens.ts'
import { Readings, type ReadingsOptions } from './readings.ts'
import type { Stores, WriteOp } from './types.ts'
import type { BatchOp } from './sublevel.ts'

export interface LevelStores extends Stores {
  readonly store: Store
  readonly readings: Readings
  readonly users: Users
  readonly devices: Devices
  readonly clients: Clients
  readonly tokens: Tokens
}

/** Opens (and migrates) the store in dataDir and loads what the stores keep in memory (pairings, member switches). */
export async function openLevelStores (dataDir: string, options: ReadingsOptions): Promise<LevelStores> {
  const store = await Store.open(dataDir)
  try {
    const users = new Users(store)
    const devices = new Devices(store)
    await users.loadRoomHidden()
    await devices.load()
    return {
      store,
      readings: new Readings(store, options),
      users,
      devices,
      clients: new Clients(store),
      tokens: new Tokens(store),
      // Only ops made by these stores come here (WriteOp is their public face).
      batch: async (ops: WriteOp[], o?: { sync?: boolean }) => { await store.batch(ops as BatchOp[], o) },
      readingLog: store.readingLog,
      close: async () => { await store.close() }
    }
  } catch (err) {
    await store.close()
    throw err
  }
}
