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
