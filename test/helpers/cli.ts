// Runs the `hr-relay` command as an operator would: as a separate process
// (runCli), or, for a test about a command's output, exit code or effect,
// in this process through the same entry function bin/hr-relay.cjs calls
// (runMain), which saves the 1–2 s of CPU each spawned process costs before it
// does anything (node, the TypeScript hook, tap's processinfo hook, coverage).
// Process-level behaviour (signals, the binary's own exit, dist/ vs source,
// port and lock conflicts, another uid) keeps a real spawn.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const BIN = fileURLToPath(new URL('../../bin/hr-relay.cjs', import.meta.url))

export interface CliResult { code: number | null, stdout: string, stderr: string }

export function runCli (args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CliResult> {
  return new Promise(resolve => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    child.on('close', code => { resolve({ code, stdout, stderr }) })
  })
}

/**
 * `hr-relay ...args` in this process: bin/cli.ts's main() (what bin/hr-relay.cjs runs) with its output collected.
 * The exit code is the one bin/hr-relay.cjs sets from main()'s result; an exception main() does not handle is what
 * the process would die of (exit 1, the stack on stderr). Only for commands that end: `start` that succeeds keeps
 * running and installs signal handlers, so it is spawned (runCli) instead.
 */
export async function runMain (args: string[]): Promise<CliResult> {
  const { main } = await import('../../bin/cli.ts')
  let stdout = ''
  let stderr = ''
  const io = { stdout: { write: (s: string) => { stdout += s; return true } }, stderr: { write: (s: string) => { stderr += s; return true } } }
  let code: number
  try {
    code = await main(args, io)
  } catch (err) {
    return { code: 1, stdout, stderr: stderr + String((err as Error).stack ?? err) + '\n' }
  }
  if (code < 0) throw new Error(`hr-relay ${args.join(' ')} kept running (main() returned ${code}); spawn it with runCli`)
  return { code, stdout, stderr }
}
