// The product's CLI: loads the admin commands every feature contributes.
// bin/cli.ts adds the simulator (`sim` and the demo) and is what hr-relay runs.
import { main, SUBCOMMANDS, START_HOOKS } from './cli.ts'
import { addAdminCommands } from './cli-admin.ts'
import { ROOM_COMMANDS } from './cli-rooms.ts'
import { CLASS_COMMANDS } from './cli-classes.ts'
import { DEVICE_COMMANDS } from './cli-devices.ts'
import { INTEGRATION_COMMANDS } from './cli-integrations.ts'
import { PRIVACY_COMMANDS } from './cli-privacy.ts'

addAdminCommands(ROOM_COMMANDS)
addAdminCommands(CLASS_COMMANDS)
addAdminCommands(DEVICE_COMMANDS)
addAdminCommands(INTEGRATION_COMMANDS)
addAdminCommands(PRIVACY_COMMANDS)

export { main, SUBCOMMANDS, START_HOOKS }
