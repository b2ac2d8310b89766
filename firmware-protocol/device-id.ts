// The identifier rules shared by serial identification lines and MQTT topics.
// A device id becomes one MQTT topic level, so it must never contain the
// topic separator '/', the wildcards '+' and '#' [MQTT-4.7.1-1], NUL
// [MQTT-4.7.3-2] or anything outside printable ASCII.

/** Allowed device ids: 1 to 64 of A-Z a-z 0-9 ':' '_' '.' '-' (a BLE address like C8:2F:9A:11:22:33 fits). */
export const DEVICE_ID_PATTERN = /^[A-Za-z0-9:_.-]{1,64}$/

/** Allowed profile ids in user topics: 1 to 64 of A-Z a-z 0-9 '_' '-' (GUIDs fit). */
export const PROFILE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/

/** Firmware versions in identification lines: 1 to 32 of A-Z a-z 0-9 '.' '_' '+' '-'. */
export const FIRMWARE_VERSION_PATTERN = /^[A-Za-z0-9._+-]{1,32}$/

export function isValidDeviceId (id: unknown): id is string {
  return typeof id === 'string' && DEVICE_ID_PATTERN.test(id)
}

export function isValidProfileId (id: unknown): id is string {
  return typeof id === 'string' && PROFILE_ID_PATTERN.test(id)
}

export function isValidFirmwareVersion (version: unknown): version is string {
  return typeof version === 'string' && FIRMWARE_VERSION_PATTERN.test(version)
}
