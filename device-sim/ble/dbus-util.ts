// Small shared pieces of the BlueZ emulator: the error names BlueZ really
// sends, and turning an exported interface's properties into the a{sv}
// dictionaries of ObjectManager signals.
import * as dbus from 'dbus-next'

export const BLUEZ = 'org.bluez'

/** The error names real BlueZ replies with (doc/device-api.txt, gatt-api.txt). */
export const BLUEZ_ERRORS = {
  Failed: 'org.bluez.Error.Failed',
  InProgress: 'org.bluez.Error.InProgress',
  NotReady: 'org.bluez.Error.NotReady',
  NotConnected: 'org.bluez.Error.NotConnected',
  NotPermitted: 'org.bluez.Error.NotPermitted',
  NotSupported: 'org.bluez.Error.NotSupported',
  AlreadyConnected: 'org.bluez.Error.AlreadyConnected',
  DoesNotExist: 'org.bluez.Error.DoesNotExist',
  InvalidArguments: 'org.bluez.Error.InvalidArguments',
  UnknownObject: 'org.freedesktop.DBus.Error.UnknownObject'
} as const

export type BluezErrorName = keyof typeof BLUEZ_ERRORS

export function bluezError (name: BluezErrorName, text: string): dbus.DBusError {
  return new dbus.DBusError(BLUEZ_ERRORS[name], text)
}

interface PropertyMeta { name: string, signature: string, access: string, disabled?: boolean }

/** Every readable property of an exported interface as Variants (for GetManagedObjects / InterfacesAdded). */
export function propertiesOf (iface: dbus.interface.Interface): Record<string, dbus.Variant> {
  const meta = (iface as unknown as { $properties?: Record<string, PropertyMeta> }).$properties ?? {}
  const out: Record<string, dbus.Variant> = {}
  for (const p of Object.values(meta)) {
    if (p.disabled === true || p.access === 'write') continue
    const value: unknown = (iface as unknown as Record<string, unknown>)[p.name]
    if (value === undefined) continue
    out[p.name] = new dbus.Variant(p.signature, value)
  }
  return out
}

export function interfaceName (iface: dbus.interface.Interface): string {
  return (iface as unknown as { $name: string }).$name
}

/** Emits org.freedesktop.DBus.Properties.PropertiesChanged for `iface`. */
export function changed (iface: dbus.interface.Interface, props: Record<string, unknown>): void {
  dbus.interface.Interface.emitPropertiesChanged(iface, props, [])
}

/** `AA:BB:CC:DD:EE:FF` -> `dev_AA_BB_CC_DD_EE_FF` (BlueZ's object naming). */
export function devicePathSegment (address: string): string {
  return `dev_${address.toUpperCase().replace(/:/g, '_')}`
}

export function normaliseAddress (address: string): string {
  const upper = address.toUpperCase()
  if (!/^[0-9A-F]{2}(:[0-9A-F]{2}){5}$/.test(upper)) {
    throw new TypeError(`not a Bluetooth address: ${JSON.stringify(address)}`)
  }
  return upper
}
