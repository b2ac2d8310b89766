// Entry point of the hr-relay command: loads the subcommands every folder
// contributes, then runs the CLI.
import { main, SUBCOMMANDS } from './cli.ts'
import { runSim } from '../device-sim/cli.ts'

SUBCOMMANDS.sim = runSim

export { main }
