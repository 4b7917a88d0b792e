import { afterEach, expect, it, vi } from 'vitest'
import { main } from '../src/index.js'
import { printable } from '../src/printable.js'

// The README's programmatic use, `main(argv, io)`, from a script: `io` left
// out crashed inside main with "Cannot read properties of undefined (reading
// 'stdout')", and an argv that is no array ran a command named after its
// first character. io now defaults to the process's streams, as the binary's.

afterEach(() => {
  vi.restoreAllMocks()
})

it('main(argv) without io writes to process.stdout and returns the exit code', async () => {
  const written: string[] = []
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    written.push(String(chunk))
    return true
  })
  const code = await main(['--version'])
  vi.restoreAllMocks()
  expect(code).toBe(0)
  expect(written.join('')).toMatch(/^\d+\.\d+\.\d+\n$/)
})

it('an argv that is not an array of strings is a TypeError naming argv, before any command runs', async () => {
  await expect(main('probe' as unknown as string[])).rejects.toThrow(
    new TypeError(
      "argv must be an array of strings, without node and the script (process.argv.slice(2)), got 'probe' (a string)",
    ),
  )
  await expect(main([42] as unknown as string[])).rejects.toBeInstanceOf(TypeError)
})

it.each([
  [process.execPath, 'this process'],
  ['/opt/node-v20/bin/node', 'another node'],
  ['/home/someone/.nvm/versions/node/v24.22.3/bin/node', 'a long path'],
])(
  'main(process.argv) — node as the command (%s, %s) — is exit 2 with the process.argv.slice(2) hint',
  async (node) => {
    // It read "unknown command '/usr/bin/node'" and no more, while the
    // TypeError for an argv that is no array names the fix.
    let stderr = ''
    const code = await main([node, '/work/app/script.mjs', 'probe'], {
      stdout: () => {},
      stderr: (text) => {
        stderr += text
      },
      stderrIsTTY: false,
    })
    expect(code).toBe(2)
    // Quoted back as every argument is (printable): cut to 40 characters, so
    // a node under a long path (an nvm directory, a cache) shows its start
    // and "…" — whatever the length of this process's own path.
    expect(stderr).toContain(`unknown command '${printable(node)}'`)
    expect(stderr).toMatch(/^hourglass: unknown command '[^'\n]{1,40}': /)
    if (node.length <= 40) expect(stderr).toContain(`'${node}'`)
    expect(stderr).toContain('without node and the script (process.argv.slice(2))')
    expect(stderr.trimEnd().split('\n')).toHaveLength(1)
  },
)

it('a long node path is quoted back cut, its start and "…"', async () => {
  let stderr = ''
  await main(['/home/someone/.nvm/versions/node/v24.22.3/bin/node', 'script.mjs'], {
    stdout: () => {},
    stderr: (text) => {
      stderr += text
    },
    stderrIsTTY: false,
  })
  expect(stderr).toContain("unknown command '/home/someone/.nvm/versions/node/v24.22…'")
})

it('an unknown command that is no path to node gets no such hint', async () => {
  let stderr = ''
  const code = await main(['nodes'], {
    stdout: () => {},
    stderr: (text) => {
      stderr += text
    },
    stderrIsTTY: false,
  })
  expect(code).toBe(2)
  expect(stderr).toBe(
    "hourglass: unknown command 'nodes': demo, probe or gateway (see hourglass --help)\n",
  )
})
