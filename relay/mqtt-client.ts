// mqtt.js (the MQTT client) is imported when a feature that talks to an
// external broker starts: the upstream bridge and Home Assistant's upstream
// connection. A relay without `upstream` configured never loads it (its
// embedded broker is aedes). A missing or failing package rejects the start
// of that feature with the import's own error, as a static import did.
import type { IClientOptions, MqttClient } from 'mqtt'

export type MqttConnect = (url: string, options: IClientOptions) => MqttClient

/** mqtt.js's connect(), importing mqtt.js on first use. */
export async function loadMqttConnect (): Promise<MqttConnect> {
  const { default: mqtt } = await import('mqtt')
  return (url, options) => mqtt.connect(url, options)
}

/**
 * Ends a client and then removes the listeners its owner added (`[event, fn]` pairs). endAsync can resolve before
 * the socket's 'close'; mqtt.js clears its CONNACK timer on that event, so the owner's listeners stay until then
 * (removing them earlier let a stop during a connection attempt fire 'connack timeout' with no listener and crash
 * the process).
 */
export async function endClient (client: MqttClient, listeners: ReadonlyArray<readonly [string, (...args: never[]) => void]>): Promise<void> {
  const closed = client.stream === undefined || client.stream.closed
    ? Promise.resolve()
    : new Promise<void>(resolve => { client.stream.once('close', () => { resolve() }) })
  await client.endAsync(true)
  await closed
  for (const [event, fn] of listeners) client.off(event as 'close', fn as () => void)
}
