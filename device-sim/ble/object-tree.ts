// The emulated BlueZ object tree: exports objects on the emulator's bus
// connection and announces them through org.freedesktop.DBus.ObjectManager
// at "/" (InterfacesAdded / InterfacesRemoved), as bluetoothd does. node-ble
// itself walks the tree by introspection, which dbus-next answers from the
// exported paths.
import * as dbus from 'dbus-next'
import { interfaceName, propertiesOf } from './dbus-util.ts'

const { Interface } = dbus.interface

type Dict = Record<string, Record<string, dbus.Variant>>

export class ObjectManager1 extends Interface {
  constructor (private readonly tree: ObjectTree) { super('org.freedesktop.DBus.ObjectManager') }

  GetManagedObjects (): Record<string, Dict> {
    return this.tree.managedObjects()
  }

  InterfacesAdded (path: string, interfaces: Dict): [string, Dict] { return [path, interfaces] }
  InterfacesRemoved (path: string, names: string[]): [string, string[]] { return [path, names] }
}
ObjectManager1.configureMembers({
  methods: { GetManagedObjects: { inSignature: '', outSignature: 'a{oa{sa{sv}}}' } },
  signals: {
    InterfacesAdded: { signature: 'oa{sa{sv}}' },
    InterfacesRemoved: { signature: 'oas' }
  }
})

export class ObjectTree {
  private readonly objects = new Map<string, dbus.interface.Interface[]>()
  readonly manager: ObjectManager1

  constructor (private readonly bus: dbus.MessageBus) {
    this.manager = new ObjectManager1(this)
    bus.export('/', this.manager)
  }

  /** Exports `ifaces` at `path` and announces them. */
  add (path: string, ...ifaces: dbus.interface.Interface[]): void {
    const existing = this.objects.get(path) ?? []
    const added: Dict = {}
    for (const iface of ifaces) {
      this.bus.export(path, iface)
      existing.push(iface)
      added[interfaceName(iface)] = propertiesOf(iface)
    }
    this.objects.set(path, existing)
    this.manager.InterfacesAdded(path, added)
  }

  /** Removes some interfaces of `path` (all when `ifaces` is empty) and announces it. */
  remove (path: string, ...ifaces: dbus.interface.Interface[]): void {
    const existing = this.objects.get(path)
    if (existing === undefined) return
    const removed = ifaces.length === 0 ? existing : existing.filter(i => ifaces.includes(i))
    const kept = existing.filter(i => !removed.includes(i))
    // dbus-next's unexport(path, iface) drops the whole object, so unexport
    // everything and export back what stays.
    this.bus.unexport(path, undefined as unknown as dbus.interface.Interface)
    for (const iface of kept) this.bus.export(path, iface)
    if (kept.length === 0) this.objects.delete(path)
    else this.objects.set(path, kept)
    if (removed.length > 0) this.manager.InterfacesRemoved(path, removed.map(interfaceName))
  }

  has (path: string): boolean { return this.objects.has(path) }

  interfacesAt (path: string): string[] {
    return (this.objects.get(path) ?? []).map(interfaceName)
  }

  /** True when `path` is exported or is an ancestor of an exported object (introspection answers it). */
  isNode (path: string): boolean {
    if (path === '/' || this.objects.has(path)) return true
    const prefix = path.endsWith('/') ? path : `${path}/`
    for (const p of this.objects.keys()) if (p.startsWith(prefix)) return true
    return false
  }

  managedObjects (): Record<string, Dict> {
    const out: Record<string, Dict> = {}
    for (const [path, ifaces] of this.objects) {
      const dict: Dict = {}
      for (const iface of ifaces) dict[interfaceName(iface)] = propertiesOf(iface)
      out[path] = dict
    }
    return out
  }

  clear (): void {
    for (const path of [...this.objects.keys()].reverse()) this.remove(path)
  }
}
