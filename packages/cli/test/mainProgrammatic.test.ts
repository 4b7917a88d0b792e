import { afterEach, expect, it, vi } from 'vitest'
import { main } from '../src/index.js'

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
