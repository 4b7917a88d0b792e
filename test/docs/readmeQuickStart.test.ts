import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { renderDemo } from '../../packages/cli/src/demo/renderDemo.js'
import type { ChainFigures } from '../../packages/cli/src/demo/summarize.js'
import { commands } from '../../packages/cli/src/index.js'
import { mainHelp } from '../../packages/cli/src/main.js'
import { writeExpired } from '../../packages/express/src/writeExpired.js'

// What a new user meets first in the root README, read without running
// anything (the demo and examples run in test/demo.test.ts and
// test/examples*.test.ts): the commands it tells them to type exist, the
// install-script warning it tells them to expect names the right packages,
// the demo's sample is what the demo prints, and every example is listed.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8')
const shellBlocks = [...readme.matchAll(/^```(?:sh|bash|console)\n([\s\S]*?)^```/gm)].map(
  (m) => m[1]!,
)
/** Inline code spans and shell lines: where the README names a command. */
const commandTexts = [...shellBlocks, ...[...readme.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!)]

describe('root README commands', () => {
  it('every npm script it names (npm start, npm test, npm run x) is one package.json has', () => {
    const { scripts } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>
    }
    const named = new Set<string>()
    for (const text of commandTexts) {
      for (const m of text.matchAll(/\bnpm (?:run ([\w:-]+)|(start|test)\b)/g)) {
        named.add(m[1] ?? m[2]!)
      }
    }
    expect([...named]).toEqual(expect.arrayContaining(['start', 'test', 'build']))
    expect([...named].filter((name) => !(name in scripts))).toEqual([])
  })

  it('names every dependency whose install script npm 11 holds back, as allowScripts lists them', () => {
    const lock = JSON.parse(readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>
    }
    const withScripts = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript === true)
      .map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length))
      .sort()
    const { allowScripts } = JSON.parse(
      readFileSync(path.join(repoRoot, 'package.json'), 'utf8'),
    ) as { allowScripts: Record<string, boolean> }
    const sentence = /install scripts \(([^)]*)\) are not allowed/.exec(readme.replace(/\s+/g, ' '))
    expect(sentence, 'the quick start’s note on install scripts').not.toBeNull()
    const named = [...sentence![1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).sort()
    expect(named).toEqual(withScripts)
    expect(Object.keys(allowScripts).sort()).toEqual(withScripts)
  })

  it('every flag given to hourglass (npx hourglass <command>, npm start -- for the demo) is in that command’s --help', () => {
    const uses: { command: string; flags: string[]; line: string }[] = []
    for (const text of commandTexts) {
      for (const line of text.split('\n')) {
        const code = line.replace(/\s#.*$/, '')
        const cli = /\bnpx hourglass (\w+)(.*)$/.exec(code)
        // `npx hourglass --version`: a flag before any command is main's own.
        const bare = /\bnpx hourglass((?: --?[a-zA-Z][\w-]*)+)\s*$/.exec(code)
        const start = /\bnpm start\b.*? -- (.*)$/.exec(code)
        if (cli) uses.push({ command: cli[1]!, flags: flagsOf(cli[2]!), line })
        else if (bare) uses.push({ command: '', flags: flagsOf(bare[1]!), line })
        else if (start) uses.push({ command: 'demo', flags: flagsOf(start[1]!), line })
      }
    }
    expect(uses.map((u) => u.command)).toEqual(expect.arrayContaining(['probe', 'gateway', 'demo']))
    const unknown: string[] = []
    expect(uses.map((u) => u.command)).toContain('')
    for (const { command: name, flags, line } of uses) {
      const help = name === '' ? mainHelp : commands.find((c) => c.name === name)?.help
      if (help === undefined) {
        unknown.push(`${line}: no command ${name}`)
        continue
      }
      for (const flag of flags) {
        if (!new RegExp(`(^|[\\s,[])${flag}(?![\\w-])`, 'm').test(help)) {
          unknown.push(`${line}: ${flag}`)
        }
      }
    }
    expect(unknown).toEqual([])
  })
})

/** The `--x` / `-X` flags of a command line (quoted values left out). */
function flagsOf(args: string): string[] {
  const bare = args.replace(/'[^']*'|"[^"]*"/g, '')
  return [...bare.matchAll(/(?:^|\s)(--?[a-zA-Z][\w-]*)/g)].map((m) => m[1]!)
}

describe("root README: the demo's sample", () => {
  // The block that starts with the table's header row.
  const block = /^```\n( +toolkit +naive\n[\s\S]*?)^```/m.exec(readme)?.[1]
  const lines = (block ?? '').trimEnd().split('\n')
  const cells = (label: string): [string, string] => {
    const line = lines.find((l) => l.startsWith(label))
    const m = line && /^(.*?\S)\s{2,}(\S.*?)\s{2,}(\S.*)$/.exec(line)
    if (!m || m[1]!.trim() !== label.trim()) throw new Error(`no row "${label}" in ${block}`)
    return [m[2]!, m[3]!]
  }
  const num = (text: string): number | null => (text === '—' ? null : Number(text))
  const frac = (text: string) => {
    const [onTime = NaN, requests = NaN] = text.split('/').map(Number)
    return { onTime, requests }
  }
  const budgets = lines.flatMap((l) => {
    const m = /^ {2}with a (\d+) (ms|s) budget/.exec(l)
    return m ? [Number(m[1]) * (m[2] === 's' ? 1000 : 1)] : []
  })
  const label = (ms: number) =>
    `  with a ${ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`} budget`
  const chain = (i: 0 | 1): ChainFigures => {
    const pick = (row: string) => cells(row)[i]
    const vs = pick('  arrived vs deadline, median / max (ms)')
    const [zombieTotal = '', zombieMax = ''] = pick('  total / longest (ms)').split(' / ')
    const total = frac(pick('answered on time (200 by the deadline)'))
    return {
      requests: total.requests,
      onTime: total.onTime,
      onTimeByBudget: Object.fromEntries(budgets.map((ms) => [ms, frac(pick(label(ms)))])),
      late: Number(pick('answered late (200 after the deadline)')),
      timeouts504: Number(pick('504: deadline exceeded, slice named')),
      timeout504VsDeadlineMs:
        vs === '—'
          ? null
          : {
              median: Number(vs.split(' / ')[0]),
              max: Number(vs.split(' / ')[1]),
            },
      latestAnswerVsDeadlineMs: num(pick('latest answer vs its deadline (ms)')),
      otherErrors: Number(pick('other errors (502, 503, …)')),
      gaveUp: Number(pick('no answer: the client gave up')),
      zombie: {
        requests: Number(pick('had its answer or gave up: requests')),
        totalMs: Number(zombieTotal),
        maxMs: Number(zombieMax),
        stillRunningAtEnd: 0,
      },
      providerCalls: Number(pick('provider calls')),
      paidGenerations: Number(pick('paid generations')),
      paidPerDelivered: num(pick('paid generations per delivered answer')),
    }
  }

  it('is the table the demo prints for the figures it shows (labels, order, alignment)', () => {
    expect(block, 'the README has no demo table').toBeDefined()
    expect(budgets).toEqual([300, 1000, 2000])
    const printed = renderDemo({
      seed: 7,
      budgetsMs: budgets,
      graceMs: 250,
      elapsedMs: 0,
      toolkit: chain(0),
      naive: chain(1),
      waterfall: null,
    }).split('\n')
    const header = printed.findIndex((l) => /toolkit +naive$/.test(l))
    expect(printed.slice(header, header + lines.length).join('\n')).toBe(lines.join('\n'))
  })

  it('adds up: each request counted once per chain, paid generations per delivered answer as printed', () => {
    for (const c of [chain(0), chain(1)]) {
      const byBudget = Object.values(c.onTimeByBudget)
      expect(byBudget.reduce((sum, b) => sum + b.onTime, 0)).toBe(c.onTime)
      expect(byBudget.reduce((sum, b) => sum + b.requests, 0)).toBe(c.requests)
      expect(c.onTime + c.late + c.timeouts504 + c.otherErrors + c.gaveUp).toBe(c.requests)
      expect(c.paidPerDelivered).toBe(
        c.onTime === 0 ? null : Number((c.paidGenerations / c.onTime).toFixed(2)),
      )
      expect(c.paidGenerations).toBeLessThanOrEqual(c.providerCalls)
    }
  })
})

describe('root README: examples', () => {
  it('lists every example under examples/, each with the command that runs it, the one its own header gives', () => {
    const names = readdirSync(path.join(repoRoot, 'examples'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort()
    expect(names.length).toBeGreaterThan(0)
    const problems: string[] = []
    for (const name of names) {
      const file = `examples/${name}/index.mjs`
      const command = `node ${file}`
      if (!readme.includes(`](${file})`)) problems.push(`${name}: no link to ${file}`)
      if (!readme.includes(`\`${command}\``)) problems.push(`${name}: no \`${command}\``)
      const source = readFileSync(path.join(repoRoot, file), 'utf8')
      if (!source.includes(`Run: npm run build && ${command}`)) {
        problems.push(`${file}: its header says no "Run: npm run build && ${command}"`)
      }
    }
    expect(problems).toEqual([])
  })
})

describe('root README: packages and paths', () => {
  it('the packages table has one row per package under packages/, named as its package.json and linked to its folder', () => {
    const rows = [...readme.matchAll(/^\| \[`([^`]+)`\]\(packages\/([^)/]+)\) \|/gm)].map(
      (m) => `${m[1]} → packages/${m[2]}`,
    )
    const actual = readdirSync(path.join(repoRoot, 'packages'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => {
        const manifest = path.join(repoRoot, 'packages', entry.name, 'package.json')
        if (!existsSync(manifest)) return []
        const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }
        return [`${name} → packages/${entry.name}`]
      })
    expect(rows.slice().sort()).toEqual(actual.sort())
  })

  it('every repository path it names in code (`test/…`, `.ci/run`, globs too) exists', () => {
    // Links are checked in readmeCommands.test.ts; a path in backticks is
    // prose a rename leaves behind just as easily.
    const named = new Set(
      [...readme.matchAll(/`([^`\s]+)`/g)]
        .map((m) => m[1]!)
        .filter((text) => /^(?:\.ci|bench|examples|packages|scripts|test)\//.test(text)),
    )
    expect(named.size).toBeGreaterThan(3)
    const missing = [...named].filter((p) => !pathExists(p))
    expect(missing).toEqual([])
  })
})

/** Whether a repo path exists; a `*` in its last part matches any run of characters. */
function pathExists(repoPath: string): boolean {
  const dir = path.posix.dirname(repoPath)
  const base = path.posix.basename(repoPath)
  if (!base.includes('*')) return existsSync(path.join(repoRoot, repoPath))
  const pattern = new RegExp(`^${base.split('*').map(escapeRegExp).join('.*')}$`)
  const where = path.join(repoRoot, dir)
  return existsSync(where) && readdirSync(where).some((name) => pattern.test(name))
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

describe('root README: the 504 it shows', () => {
  it('every deadline_exceeded body it quotes is, byte for byte, the one deadline() writes for those figures', () => {
    const samples = [...readme.matchAll(/`(\{"error":"deadline_exceeded"[^`]*\})`/g)].map(
      (m) => m[1]!,
    )
    expect(samples.length).toBeGreaterThan(0)
    for (const sample of samples) {
      const { budgetMs, elapsedMs, slice } = JSON.parse(sample) as {
        budgetMs: number
        elapsedMs: number
        slice: string | null
      }
      const res = new ServerResponse(new IncomingMessage(new Socket()))
      let written = ''
      res.end = ((body?: unknown) => {
        written = String(body ?? '')
        return res
      }) as typeof res.end
      expect(writeExpired(res, 'GET', { budgetMs, elapsedMs, slice: slice ?? undefined })).toBe(
        '504',
      )
      expect(written).toBe(sample)
    }
  })
})
