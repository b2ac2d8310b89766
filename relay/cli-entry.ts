// Entry point of the hr-relay command: loads the subcommands every folder
// contributes, then runs the CLI.
import { main, SUBCOMMANDS } from './cli.ts'
import { runSim } from '../device-sim/cli.ts'
import { addAdminCommands } from './cli-admin.ts'
import { ROOM_COMMANDS } from './cli-rooms.ts'
import { DEVICE_COMMANDS } from './cli-devices.ts'
import { INTEGRATION_COMMANDS } from './cli-integrations.ts'

SUBCOMMANDS.sim = runSim
addAdminCommands(ROOM_COMMANDS)
addAdminCommands(DEVICE_COMMANDS)
addAdminCommands(INTEGRATION_COMMANDS)

export { main }
