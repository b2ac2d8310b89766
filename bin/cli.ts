// The hr-relay command as installed (bin/hr-relay.cjs runs its bundle, dist/bin/cli.cjs): the
// product's CLI (relay/cli-entry.ts) with the simulator and the chain's hub (`hr-relay hub`) beside it, `hr-relay
// sim` and the demo `hr-relay start` runs when the configuration says
// `demo: true` (on by default). The one module that imports both the product
// and the simulator; neither imports the other. The simulator loads only when
// it runs, so `--help`, `admin …` and a start without the demo never load it.
import { main, SUBCOMMANDS, START_HOOKS } from '../relay/cli-entry.ts'
import type { Config } from '../relay/config.ts'
import type { DemoHooks } from '../device-sim/demo-hooks.ts'

SUBCOMMANDS.sim = async argv => await (await import('../device-sim/cli.ts')).runSim(argv)
// A chain's hub (hub/): loaded only when it runs.
SUBCOMMANDS.hub = async argv => await (await import('../hub/cli.ts')).runHub(argv)

START_HOOKS.push(() => {
  let hooks: DemoHooks<Config> | undefined
  const load = async (): Promise<DemoHooks<Config>> => (hooks ??= (await import('../device-sim/demo-hooks.ts')).demoHooks<Config>())
  return {
    beforeSources: async (config, log) => config.demo ? await (await load()).beforeSources(config, log) : null,
    afterStart: async (running, log) => running.config.demo ? await (await load()).afterStart(running, log) : null
  }
})

export { main }
