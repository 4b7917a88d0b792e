import { execFileSync } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runMain } from './runMain.js'
import { assertBuilt, hourglassBin, repoRoot, runCommand, runNode } from './runNode.js'

const version: string = JSON.parse(
  readFileSync(join(repoRoot, 'packages/cli/package.json'), 'utf8'),
).version

describe('the hourglass bin (packages/cli/bin/hourglass.js)', () => {
  it('is committed executable, so npm can link it before a build and no rebuild takes the bit away', () => {
    const staged = execFileSync('git', ['ls-files', '-s', 'packages/cli/bin/hourglass.js'], {
      cwd: repoRoot,
      encoding: 'utf8',
    })
    expect(staged, 'packages/cli/bin/hourglass.js is not in git').toMatch(/^100755 /)
    expect(statSync(hourglassBin).mode & 0o111).toBe(0o111)
    expect(readFileSync(hourglassBin, 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/)
  })

  it('runs as an executable itself (the way npm’s link runs it): hourglass --version prints the package version, exit 0', async () => {
    assertBuilt()
    const run = await runCommand(hourglassBin, ['--version'], { killAfterMs: 10_000 })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toBe(`${version}\n`)
    expect(run.stderr).toBe('')
  })

  it('hourglass --help lists the commands and --version, exit 0', async () => {
    assertBuilt()
    const run = await runNode([hourglassBin, '--help'], { killAfterMs: 10_000 })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^Usage: hourglass <command>/)
    for (const word of ['demo', 'probe', 'gateway', '--version']) expect(run.stdout).toContain(word)
  })

  it('hourglass -v prints the package version too, exit 0', async () => {
    // Told apart from --version by main() alone, judged in this process: the
    // bin's part, the printed line and the exit code, is shown above.
    const run = await runMain(['-v'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toBe(`${version}\n`)
    expect(run.stderr).toBe('')
  })

  it('says in one line what to do when nothing is built yet (a fresh clone), exit 1', async () => {
    // A copy of the shim with no dist/ beside it: what npm links on a fresh clone.
    const dir = mkdtempSync(join(tmpdir(), 'hourglass-bin-'))
    try {
      mkdirSync(join(dir, 'bin'))
      // Its own package.json, so Node loads the copy as ESM like the real one.
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
      copyFileSync(hourglassBin, join(dir, 'bin', 'hourglass.js'))
      const run = await runNode([join(dir, 'bin', 'hourglass.js'), '--version'])
      expect(run.code).toBe(1)
      expect(run.stdout).toBe('')
      expect(run.stderr).toBe('hourglass: not built yet — run `npm run build` first\n')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('npx hourglass from the repository root', () => {
  const link = join(repoRoot, 'node_modules', '.bin', 'hourglass')
  const linked = existsSync(link) && realpathSync(link) === realpathSync(hourglassBin)

  // One run shows the link: --help through the bin is shown above.
  it('npx --no-install hourglass --version exits 0, printing the version', async (ctx) => {
    if (!linked) {
      const why = `node_modules/.bin/hourglass ${existsSync(link) ? `points at ${realpathSync(link)}` : 'is missing'}, not at packages/cli/bin/hourglass.js: run \`npm install\` to relink the bin`
      // Under CI a fresh `npm ci` has linked it: missing there is a packaging bug.
      if (process.env['CI'] === 'true') throw new Error(why)
      ctx.skip(why)
    }
    assertBuilt()
    const run = await runCommand('npx', ['--no-install', 'hourglass', '--version'], {
      killAfterMs: 20_000,
    })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toBe(`${version}\n`)
  })
})
