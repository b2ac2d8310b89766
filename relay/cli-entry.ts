// Entry point of the hr-relay command: registers the subcommands every folder
// contributes, then runs the CLI. `sim` loads the simulator only when it runs.
import { main, SUBCOMMANDS } from './cli.ts'
import { addAdminCommands } from './cli-admin.ts'
import { ROOM_COMMANDS } from './cli-rooms.ts'
import { DEVICE_COMMANDS } from './cli-devices.ts'
import { INTEGRATION_COMMANDS } from './cli-integrations.ts'

SUBCOMMANDS.sim = async argv => await (await import('../device-sim/cli.ts')).runSim(argv)
addAdminCommands(ROOM_COMMANDS)
addAdminCommands(DEVICE_COMMANDS)
addAdminCommands(INTEGRATION_COMMANDS)

export { main }
