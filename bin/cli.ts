// The hr-relay command as installed (bin/hr-relay.js runs this): the
// product's CLI (relay/cli-entry.ts) with the simulator beside it, `hr-relay
// sim` and the demo `hr-relay start` runs when the configuration says
// `demo: true` (on by default). The one module that imports both the product
// and the simulator; neither imports the other.
import { main, SUBCOMMANDS, START_HOOKS } from '../relay/cli-entry.ts'
import type { Config } from '../relay/config.ts'
import { runSim } from '../device-sim/cli.ts'
import { demoHooks } from '../device-sim/demo-hooks.ts'

SUBCOMMANDS.sim = runSim
START_HOOKS.push(() => demoHooks<Config>())

export { main }
