// Entry point of the hr-relay command: loads the subcommands every folder
// contributes, then runs the CLI.
import { main } from './cli.ts'

export { main }
