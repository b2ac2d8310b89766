// Starts the service and records every route its Fastify instance registers, through Fastify's documented
// `fastify.initialization` diagnostics channel (published when an instance is made, before any route) and an
// onRoute hook added there. The OpenAPI, audit and operator-role tests walk the routes it gives.
import { channel } from 'node:diagnostics_channel'
import type { FastifyInstance, RouteOptions } from 'fastify'
import { startTestService, type TestService } from './service.ts'

export interface RecordedRoute { method: string, url: string }

export async function startRecording (t: Parameters<typeof startTestService>[0], config: Record<string, any> = {}): Promise<{ svc: TestService, app: FastifyInstance | undefined, routes: RecordedRoute[] }> {
  const routes: RecordedRoute[] = []
  let app: FastifyInstance | undefined
  const init = channel('fastify.initialization')
  const onInit = (message: unknown): void => {
    if (app !== undefined) return
    app = (message as { fastify: FastifyInstance }).fastify
    app.addHook('onRoute', (route: RouteOptions) => {
      for (const method of Array.isArray(route.method) ? route.method : [route.method]) routes.push({ method, url: route.url })
    })
  }
  init.subscribe(onInit)
  try {
    const svc = await startTestService(t, config)
    return { svc, app, routes }
  } finally {
    init.unsubscribe(onInit)
  }
}
