// `npm run build:emit` with its output on stderr, for `npm start`: stdout then
// carries only what the demo prints, so `npm start --silent -- --json | jq`
// works (tsc prints its diagnostics on stdout). The build's exit
// code is passed on; a failed build stops `npm start` before the demo runs.
// The emit-only build (`tsc -b --noCheck`): the same output as `npm run
// build`, without type-checking every source first (that is `npm test`'s
// and `npm run typecheck`'s job): 8 s on a fresh clone instead of 12, and
// nothing to redo after `npm test`, which builds the same way.
import { spawn } from 'node:child_process'

// Under npm, npm_execpath is npm's own CLI script: run it with this node,
// no shell and no PATH lookup, the same on every platform.
// biome-ignore lint/suspicious/noUndeclaredEnvVars: set by npm for its scripts; not a turbo task input
const npm = process.env.npm_execpath
const child = npm
  ? spawn(process.execPath, [npm, 'run', 'build:emit', '--silent'], { stdio: ['inherit', 2, 2] })
  : spawn('npm', ['run', 'build:emit', '--silent'], {
      stdio: ['inherit', 2, 2],
      shell: process.platform === 'win32',
    })
child.once('error', (error) => {
  process.stderr.write(`npm start: cannot run the build: ${error.message}\n`)
  process.exitCode = 1
})
child.once('close', (code, signal) => {
  process.exitCode = code ?? (signal ? 1 : 0)
})
