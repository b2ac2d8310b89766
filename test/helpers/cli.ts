// Runs the `hr-relay` command as a separate process, as an operator would.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const BIN = fileURLToPath(new URL('../../bin/hr-relay.js', import.meta.url))

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
