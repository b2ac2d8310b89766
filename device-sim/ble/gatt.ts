// The Heart Rate GATT service of an emulated strap, as BlueZ exports a
// remote device's attributes: org.bluez.GattService1 at .../serviceXXXX and
// org.bluez.GattCharacteristic1 at .../serviceXXXX/charYYYY
// (bluez doc/gatt-api.txt). Notifications are PropertiesChanged on Value.
import * as dbus from 'dbus-next'
import {
  BODY_SENSOR_LOCATION_UUID,
  HEART_RATE_CONTROL_POINT_UUID,
  HEART_RATE_MEASUREMENT_UUID,
  HEART_RATE_SERVICE_UUID
} from '../../firmware-protocol/ble.ts'
import { bluezError, changed } from './dbus-util.ts'

const { Interface } = dbus.interface

export class GattService1 extends Interface {
  constructor (readonly uuid: string, readonly devicePath: string) { super('org.bluez.GattService1') }
  get UUID (): string { return this.uuid }
  get Primary (): boolean { return true }
  get Device (): string { return this.devicePath }
  get Includes (): string[] { return [] }
}
GattService1.configureMembers({
  properties: {
    UUID: { signature: 's', access: 'read' },
    Primary: { signature: 'b', access: 'read' },
    Device: { signature: 'o', access: 'read' },
    Includes: { signature: 'ao', access: 'read' }
  }
})

export interface CharacteristicBehaviour {
  flags: string[]
  /** ReadValue; absent = NotPermitted. */
  read?: () => Uint8Array
  /** WriteValue; may throw a DBusError. Absent = NotPermitted. */
  write?: (value: Uint8Array, type: string) => void
  onNotifyChange?: (notifying: boolean) => void
}

export class GattCharacteristic1 extends Interface {
  private value: Buffer = Buffer.alloc(0)
  private notifying = false

  constructor (readonly uuid: string, readonly servicePath: string, private readonly behaviour: CharacteristicBehaviour) {
    super('org.bluez.GattCharacteristic1')
  }

  get UUID (): string { return this.uuid }
  get Service (): string { return this.servicePath }
  get Value (): Buffer { return this.value }
  get Notifying (): boolean { return this.notifying }
  get Flags (): string[] { return this.behaviour.flags }

  ReadValue (_options: Record<string, dbus.Variant>): Buffer {
    if (this.behaviour.read === undefined) throw bluezError('NotPermitted', 'Read not permitted')
    this.value = Buffer.from(this.behaviour.read())
    return this.value
  }

  WriteValue (value: Buffer | number[], options: Record<string, dbus.Variant>): void {
    if (this.behaviour.write === undefined) throw bluezError('NotPermitted', 'Write not permitted')
    const type = options.type?.value
    this.behaviour.write(Uint8Array.from(value), typeof type === 'string' ? type : 'request')
  }

  StartNotify (): void {
    if (!this.behaviour.flags.includes('notify')) throw bluezError('NotSupported', 'Operation is not supported')
    if (this.notifying) return
    this.notifying = true
    changed(this, { Notifying: true })
    this.behaviour.onNotifyChange?.(true)
  }

  StopNotify (): void {
    if (!this.notifying) throw bluezError('Failed', 'No notify session started')
    this.endNotify()
  }

  /** Ends the notify session without a client asking (link lost). */
  endNotify (): void {
    if (!this.notifying) return
    this.notifying = false
    changed(this, { Notifying: false })
    this.behaviour.onNotifyChange?.(false)
  }

  isNotifying (): boolean { return this.notifying }

  /** Sends a notification: Value changes and PropertiesChanged carries it. */
  notify (bytes: Uint8Array): boolean {
    if (!this.notifying) return false
    this.value = Buffer.from(bytes)
    changed(this, { Value: this.value })
    return true
  }
}
GattCharacteristic1.configureMembers({
  properties: {
    UUID: { signature: 's', access: 'read' },
    Service: { signature: 'o', access: 'read' },
    Value: { signature: 'ay', access: 'read' },
    Notifying: { signature: 'b', access: 'read' },
    Flags: { signature: 'as', access: 'read' }
  },
  methods: {
    ReadValue: { inSignature: 'a{sv}', outSignature: 'ay' },
    WriteValue: { inSignature: 'aya{sv}', outSignature: '' },
    StartNotify: { inSignature: '', outSignature: '' },
    StopNotify: { inSignature: '', outSignature: '' }
  }
})

export interface HeartRateGattHooks {
  location: () => number
  controlPointWrite: (value: Uint8Array) => void
  notifyChange: (notifying: boolean) => void
}

/** The exported objects of one strap's Heart Rate service (handles as a real strap's GATT database). */
export class HeartRateGatt {
  readonly servicePath: string
  readonly service: GattService1
  readonly measurement: GattCharacteristic1
  readonly location: GattCharacteristic1
  readonly controlPoint: GattCharacteristic1

  constructor (devicePath: string, hooks: HeartRateGattHooks) {
    this.servicePath = `${devicePath}/service000c`
    this.service = new GattService1(HEART_RATE_SERVICE_UUID, devicePath)
    this.measurement = new GattCharacteristic1(HEART_RATE_MEASUREMENT_UUID, this.servicePath, {
      flags: ['notify'],
      onNotifyChange: hooks.notifyChange
    })
    this.location = new GattCharacteristic1(BODY_SENSOR_LOCATION_UUID, this.servicePath, {
      flags: ['read'],
      read: () => Uint8Array.of(hooks.location())
    })
    this.controlPoint = new GattCharacteristic1(HEART_RATE_CONTROL_POINT_UUID, this.servicePath, {
      flags: ['write'],
      write: (value) => {
        hooks.controlPointWrite(value)
        // HRS §3.3.2: only 0x01 (Reset Energy Expended) is defined; anything
        // else is ATT error 0x80, which BlueZ reports as Failed.
        if (value.length !== 1 || value[0] !== 0x01) throw bluezError('Failed', 'Operation failed with ATT error: 0x80')
      }
    })
  }

  /** [path, interface] pairs, parents first. */
  objects (): Array<[string, dbus.interface.Interface]> {
    return [
      [this.servicePath, this.service],
      [`${this.servicePath}/char000d`, this.measurement],
      [`${this.servicePath}/char0010`, this.location],
      [`${this.servicePath}/char0012`, this.controlPoint]
    ]
  }
}
