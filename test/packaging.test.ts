import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from './cli/runNode.js'

// What a registry user downloads: every package packed exactly as `npm publish`
// would pack it (`npm pack --dry-run`), its file list checked against what a
// user needs and nothing else. Reads the built dist/, so it needs a build.

const run = promisify(execFile)
const github = 'https://github.com/hourglass-dev/hourglass'
const rootLicense = readFileSync(path.join(repoRoot, 'LICENSE'), 'utf8')
const rootPackage = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8'))

const packageNames = readdirSync(path.join(repoRoot, 'packages')).filter((name) =>
  existsSync(path.join(repoRoot, 'packages', name, 'package.json')),
)

interface Packed {
  dir: string
  manifest: PackageJson
  files: Set<string>
}

interface PackageJson {
  name: string
  license?: string
  repository?: { type?: string; url?: string; directory?: string }
  homepage?: string
  bugs?: { url?: string }
  keywords?: unknown
  engines?: { node?: string }
  exports?: unknown
  main?: string
  types?: string
  bin?: string | Record<string, string>
}

/**
 * Every package at once, as `npm publish` would pack each (one npm process:
 * ten cost ~5 s of CPU). --ignore-scripts: list what is there; a prepack
 * script must not build during a test.
 */
async function packAll(names: readonly string[]): Promise<Map<string, Packed>> {
  for (const name of names) {
    if (!existsSync(path.join(repoRoot, 'packages', name, 'dist', 'index.js'))) {
      throw new Error(`packages/${name}/dist/index.js does not exist: run \`npm run build\` first`)
    }
  }
  const workspaces = names.flatMap((name) => ['-w', `packages/${name}`])
  const { stdout } = await run(
    'npm',
    ['pack', '--dry-run', '--json', '--ignore-scripts', ...workspaces],
    { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 },
  )
  const reports = JSON.parse(stdout) as { name: string; files: { path: string }[] }[]
  const packed = new Map<string, Packed>()
  for (const name of names) {
    const dir = path.join(repoRoot, 'packages', name)
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as PackageJson
    const report = reports.find((r) => r.name === manifest.name)
    if (report === undefined) throw new Error(`npm pack reported nothing for ${manifest.name}`)
    packed.set(name, { dir, manifest, files: new Set(report.files.map((file) => file.path)) })
  }
  return packed
}

let packed = new Map<string, Packed>()

// `npm pack --dry-run` of every package: ~4 s of CPU, 15 s of wall time on
// a box at load 19, and past the 20 s hook timeout at load 30 (a run beside
// other suites). A bound on a hang, not a figure tested: 60 s.
beforeAll(async () => {
  packed = await packAll(packageNames)
}, 60_000)

/** The tarball-relative file a link or a source map entry points at, or why it cannot be one. */
function resolveInTarball(from: string, target: string): { file: string } | { problem: string } {
  if (target.startsWith('/'))
    return { problem: 'root-relative (npm and GitHub disagree on the root)' }
  const file = path.posix.normalize(path.posix.join(path.posix.dirname(from), target))
  if (file.startsWith('../')) return { problem: 'outside the package' }
  return { file }
}

function isShipped(files: Set<string>, file: string): boolean {
  const dir = file.replace(/\/$/, '')
  return files.has(dir) || [...files].some((shipped) => shipped.startsWith(`${dir}/`))
}

/** Link targets in Markdown prose: inline links and images, reference definitions, HTML href/src. */
function markdownLinks(markdown: string): string[] {
  const prose = markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/`[^`\n]*`/g, '')
  const targets: string[] = []
  for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    targets.push(match[1]!)
  }
  for (const match of prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) {
    targets.push(match[1]!)
  }
  for (const match of prose.matchAll(/\b(?:href|src)\s*=\s*"([^"]+)"/g)) targets.push(match[1]!)
  return targets
}

const isUrl = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')
const withoutFragment = (target: string) => decodeURI(target.replace(/[?#].*$/, ''))

/** `https://github.com/hourglass-dev/hourglass/blob/main/<path>` → `<path>`, for links into this repository. */
function repositoryPath(url: string): string | undefined {
  const match = url.match(
    /^https:\/\/github\.com\/hourglass-dev\/hourglass\/(?:blob|tree)\/main\/([^#?]+)/,
  )
  return match ? decodeURI(match[1]!) : undefined
}

function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (Array.isArray(value)) return value.flatMap(exportTargets)
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets)
  return []
}

it('the repository is licensed Apache-2.0 and says so', () => {
  expect(rootLicense).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004\s/)
  expect(rootLicense).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION')
  expect(rootLicense).toContain('END OF TERMS AND CONDITIONS')
  expect(rootLicense).toContain('Copyright 2026 The Hourglass authors')
  expect(rootPackage.license).toBe('Apache-2.0')
  expect(packageNames.length).toBeGreaterThan(0)
})

describe.each(packageNames)('packages/%s, as npm packs it', (name) => {
  const get = () => packed.get(name)!

  it('ships LICENSE (the repository one), README.md, package.json, dist/index.js and dist/index.d.ts', () => {
    const { dir, files } = get()
    for (const file of [
      'LICENSE',
      'README.md',
      'package.json',
      'dist/index.js',
      'dist/index.d.ts',
    ]) {
      expect(files, file).toContain(file)
    }
    expect(readFileSync(path.join(dir, 'LICENSE'), 'utf8')).toBe(rootLicense)
  })

  it('ships nothing a user does not need: no build cache, no tests, nothing outside dist/, src/, docs/, bin/', () => {
    const stray = [...get().files].filter(
      (file) =>
        /\.tsbuildinfo$/.test(file) ||
        /(^|\/)(test|tests|__tests__|fixtures)\//.test(file) ||
        /\.(test|spec|bench)\.[cm]?[jt]sx?$/.test(file) ||
        !/^(dist|src|docs|bin)\/|^(LICENSE|README\.md|package\.json)$/.test(file),
    )
    expect(stray).toEqual([])
  })

  it('every source map names only files in the tarball (or embeds them)', () => {
    const { dir, files } = get()
    const maps = [...files].filter((file) => file.endsWith('.map'))
    expect(maps.length).toBeGreaterThan(0)
    const unresolved: string[] = []
    for (const map of maps) {
      const {
        sources = [],
        sourceRoot = '',
        sourcesContent = [],
      } = JSON.parse(readFileSync(path.join(dir, map), 'utf8')) as {
        sources?: string[]
        sourceRoot?: string
        sourcesContent?: (string | null)[]
      }
      sources.forEach((source, i) => {
        if (typeof sourcesContent[i] === 'string') return
        const where = resolveInTarball(map, path.posix.join(sourceRoot, source))
        if (!('file' in where) || !files.has(where.file)) unresolved.push(`${map} → ${source}`)
      })
    }
    expect(unresolved).toEqual([])
  })

  it('every link in its shipped Markdown leads somewhere: a shipped file, or an existing file of the repository on GitHub', () => {
    const { dir, files } = get()
    const broken: string[] = []
    for (const doc of [...files].filter((file) => file.endsWith('.md'))) {
      for (const target of markdownLinks(readFileSync(path.join(dir, doc), 'utf8'))) {
        if (target.startsWith('#')) continue
        if (isUrl(target)) {
          const inRepo = repositoryPath(target)
          if (inRepo !== undefined && !existsSync(path.join(repoRoot, inRepo))) {
            broken.push(`${doc}: ${target} (no such file in the repository)`)
          }
          continue
        }
        const where = resolveInTarball(doc, withoutFragment(target))
        if (!('file' in where)) broken.push(`${doc}: ${target} (${where.problem})`)
        else if (!isShipped(files, where.file))
          broken.push(`${doc}: ${target} (not in the tarball)`)
      }
    }
    expect(broken).toEqual([])
  })

  it('every export condition (@hourglass/source included) and every bin points at a shipped file', () => {
    const { manifest, files } = get()
    const bins =
      typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin ?? {})
    const targets = [
      ...exportTargets(manifest.exports),
      ...[manifest.main, manifest.types].filter((target) => target !== undefined),
      ...bins,
    ]
    expect(targets.length).toBeGreaterThan(0)
    const missing = targets.filter((target) => !files.has(path.posix.normalize(target)))
    expect(missing).toEqual([])
  })

  // TypeScript's classic resolution (`"module": "commonjs"`, the tsconfig of
  // most Express 4 apps: node10) reads `types` and `main`, never `exports`:
  // with `exports` alone, such a project found no types for the package
  // (TS2307), nor for `req.deadline`, while Node ≥ 20.19 require()s it.
  it('main and types name what the "." export does, for resolutions that do not read exports', () => {
    const { manifest } = get()
    const dot = (manifest.exports as Record<string, Record<string, string>>)['.']
    expect({ main: manifest.main, types: manifest.types }).toEqual({
      main: dot?.['default'],
      types: dot?.['types'],
    })
  })

  it('package.json says what it is and where it comes from: license, repository, homepage, bugs, keywords, engines', () => {
    const { manifest } = get()
    expect(manifest.license).toBe('Apache-2.0')
    expect(manifest.repository).toEqual({
      type: 'git',
      url: `git+${github}.git`,
      directory: `packages/${name}`,
    })
    expect(manifest.homepage).toBe(`${github}/tree/main/packages/${name}#readme`)
    expect(manifest.bugs?.url).toBe(`${github}/issues`)
    expect(Array.isArray(manifest.keywords)).toBe(true)
    const keywords = manifest.keywords as unknown[]
    expect(keywords.length).toBeGreaterThan(0)
    for (const keyword of keywords) expect(keyword).toMatch(/^\S+$/)
    expect(manifest.engines?.node).toBe(rootPackage.engines.node)
  })
})
