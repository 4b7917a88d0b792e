#!/usr/bin/env node
// `npm run test:node -- 24`: the whole suite under another Node major (22 or
// 24), with the machine's Node left alone. CI runs Node 20; this is how the
// other supported majors are checked. The binary comes from the npm registry
// (the `node-<platform>-<arch>` packages the `node` package installs from),
// so it needs nothing beyond what `npm install` reaches, and is kept in
// node_modules/.cache for the next run.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const [major, ...vitestArgs] = process.argv.slice(2)
if (!/^\d+$/.test(major ?? '')) {
  process.stderr.write('usage: npm run test:node -- <major> [vitest arguments]   (e.g. 24)\n')
  process.exit(2)
}
const platform = process.platform === 'win32' ? 'win' : process.platform
const name = `node-${platform}-${process.arch}`
const dir = join(root, 'node_modules', '.cache', 'hourglass-node', `${name}-${major}`)
const bin = join(dir, 'package', 'bin')

if (!existsSync(join(bin, 'node'))) {
  mkdirSync(dir, { recursive: true })
  process.stderr.write(`fetching ${name}@${major} from the npm registry…\n`)
  execFileSync('npm', ['pack', `${name}@${major}`, '--silent'], { cwd: dir, stdio: 'inherit' })
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))
  if (!tarball) throw new Error(`npm pack ${name}@${major} left no tarball in ${dir}`)
  execFileSync('tar', ['xzf', tarball], { cwd: dir, stdio: 'inherit' })
}

// The packages' dist is plain JavaScript: one build serves every major.
const env = {
  ...process.env,
  PATH: `${bin}${process.platform === 'win32' ? ';' : ':'}${process.env.PATH}`,
}
const version = execFileSync(join(bin, 'node'), ['--version'], { encoding: 'utf8' }).trim()
process.stderr.write(`running the suite on Node ${version}\n`)
const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, env, stdio: 'inherit' })
if (build.status !== 0) process.exit(build.status ?? 1)
const run = spawnSync(join(root, 'node_modules', '.bin', 'vitest'), ['run', ...vitestArgs], {
  cwd: root,
  env,
  stdio: 'inherit',
})
process.exit(run.status ?? 1)
