// firmware-protocol: pure codecs for every wire format hr-relay speaks.
// See README.md in this folder for the formats themselves.
export * from './errors.ts'
export * from './ble.ts'
export * from './serial.ts'
export * from './device-id.ts'
export * from './mqtt.ts'
export * from './midi.ts'
export * from './osc.ts'
export * from './ant.ts'
export * from './ant-framing.ts'
export * from './ant-heart-rate.ts'
