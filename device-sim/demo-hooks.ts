// How `hr-relay start` runs the demo beside the service: the demo's hardware
// (prepareDemo, demo-hardware.ts) is set up before the relay builds its
// sources, and the simulated gym (startDemo, demo.ts) starts once the service
// is ready. The relay offers these two hooks (startService in relay/main.ts);
// bin/cli.ts wires this in, so neither folder imports the other. Both do
// nothing unless the configuration says `demo: true`.
import type { Logger } from 'pino'
import { prepareDemo, type DemoConfig, type DemoHardware } from './demo-hardware.ts'
import { startDemo, type DemoService } from './demo.ts'

export interface DemoHooks<C extends DemoConfig & { demo: boolean }> {
  beforeSources (config: C, log: Logger): Promise<{ config: C, stop (): Promise<void> } | null>
  afterStart (service: DemoService & { config: C }, log: Logger): Promise<{ stop (): Promise<void> } | null>
}

/** The hooks of one start of the service. */
export function demoHooks<C extends DemoConfig & { demo: boolean }> (): DemoHooks<C> {
  let hardware: DemoHardware<C> | null = null
  return {
    async beforeSources (config, log) {
      if (!config.demo) return null
      hardware = await prepareDemo(config, log)
      return hardware
    },
    async afterStart (service, log) {
      if (!service.config.demo) return null
      return await startDemo(service, log, hardware)
    }
  }
}
