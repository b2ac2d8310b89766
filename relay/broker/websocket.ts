// MQTT over WebSocket on the API's Fastify server (default path /mqtt), for
// browsers and apps that cannot open a TCP port. The WebSocket becomes a
// Duplex (ws's createWebSocketStream) and goes through the same byte limit and
// hooks as a TCP connection. Clients offer the `mqtt` subprotocol; ws accepts
// the first one offered.
import type { FastifyInstance } from 'fastify'
import { createWebSocketStream } from 'ws'
import type { MqttBroker } from './broker.ts'

export function mqttWebSocketPlugin (broker: MqttBroker, path: string): (app: FastifyInstance) => Promise<void> {
  return async app => {
    app.get(path, { websocket: true }, (socket, request) => {
      const stream = createWebSocketStream(socket)
      broker.handle(stream, request.raw)
    })
  }
}
