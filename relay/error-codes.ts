// The relay layer's table of internal error codes, in the manner of fastify's
// lib/errors.js. Every error class of relay/ carries one of these as its
// `code`, so that logs and callers name it by a stable code, never by its
// text. BleError's codes are the BLE source's own table
// (relay/sources/ble/errors.ts), listed here with the rest. The README's
// "Internal error codes" table lists exactly these (test/errors-codes.test.ts).
import { errorMessage, type ErrorCodeDef } from '../firmware-protocol/errors.ts'
import { BLE_ERRORS, type BleErrorCode } from './sources/ble/errors.ts'

export const RELAY_ERROR_CODES = {
  HR_CONFIG_INVALID: { class: 'ConfigError', message: 'invalid configuration in {source}:{problems}' },
  HR_LISTEN: { class: 'ListenError', message: 'cannot listen for {what} on port {port} ({host}): {why}' },
  HR_DEPENDENCY_INTERNALS: { class: 'DependencyInternalsError', message: '{pkg} {version} no longer has {what}, which hr-relay relies on; install the version pinned in package.json (see relay/dependency-internals.ts)' },
  HR_MQTT_PACKET_TOO_LARGE: { class: 'PacketTooLargeError', message: 'MQTT packet of at least {size} bytes is above the limit of {limit} bytes' },
  HR_MQTT_MALFORMED_LENGTH: { class: 'MalformedLengthError', message: 'MQTT Remaining Length field is longer than four bytes' },
  HR_MQTT_NOT_AUTHORIZED: { class: 'MqttRefusal', message: 'publish refused: only a device may publish, and only to its own topics' },
  HR_MQTT_BAD_STATUS: { class: 'MqttRefusal', message: 'publish refused: a status other than online or offline' },
  HR_MQTT_WILL_READING: { class: 'MqttRefusal', message: 'publish refused: a reading cannot be a last will' },
  HR_MQTT_BAD_PAYLOAD: { class: 'MqttRefusal', message: 'publish refused: the payload does not decode (QoS 1; reason mqtt_<ProtocolError code>)' },
  HR_MQTT_INGEST_FAILED: { class: 'MqttRefusal', message: 'publish refused: the pipeline failed to store the reading (no PUBACK)' },
  HR_MQTT_NOT_STORED: { class: 'MqttRefusal', message: 'publish refused: the pipeline did not store the reading (QoS 1; reason: the drop reason)' },
  HR_CLI_USAGE: { class: 'CliError', message: 'a command line the CLI does not accept (exit code 2)' },
  HR_CLI_ADMIN_REFUSED: { class: 'CliError', message: 'the admin API refused the request (exit code 1; --json prints its answer)' },
  HR_CLI_FAILED: { class: 'CliError', message: 'the command failed, e.g. no running hr-relay for the data directory (exit code 1)' },
  ...Object.fromEntries(Object.entries(BLE_ERRORS).map(([code, message]) => [code, { class: 'BleError', message }])) as Record<BleErrorCode, ErrorCodeDef>
} as const satisfies Record<string, ErrorCodeDef>

export type RelayErrorCode = keyof typeof RELAY_ERROR_CODES

/** The message of `code` with its placeholders filled. */
export function relayErrorMessage (code: RelayErrorCode, params?: Readonly<Record<string, string | number>>): string {
  return errorMessage(RELAY_ERROR_CODES[code].message, params)
}

/** The code of an MQTT refusal, from its reason (the label it is counted under in hr_relay_dropped_total). */
export function mqttRefusalCode (reason: string): RelayErrorCode {
  switch (reason) {
    case 'mqtt_unauthorized_publish': return 'HR_MQTT_NOT_AUTHORIZED'
    case 'mqtt_bad_status': return 'HR_MQTT_BAD_STATUS'
    case 'mqtt_will_reading': return 'HR_MQTT_WILL_READING'
    case 'ingest_error': return 'HR_MQTT_INGEST_FAILED'
    default: return reason.startsWith('mqtt_') ? 'HR_MQTT_BAD_PAYLOAD' : 'HR_MQTT_NOT_STORED'
  }
}
