import { expect, it } from 'vitest'
import { answerRaw } from '../../../test/cli/answerRaw.js'
import { runMain } from '../../../test/cli/runMain.js'

// The environment's numbers are trimmed (PORT=" 8080" serves 8080), and so
// is --log-level, but a number flag was not: `--samples " 1"` from a quoted
// variable was refused as "must be a whole number". Blanks around a number
// flag are ignored now, as around its variable; blanks alone are refused.

it('number flags with blanks around them are read as the numbers', async () => {
  const url = await answerRaw('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok')
  const run = await runMain([
    'probe',
    url,
    '--warmup',
    ' 0',
    '--samples',
    '1 ',
    '--budget',
    '\t2000\n',
  ])
  expect(run.code, run.stderr).toBe(0)
  expect(run.stdout.split('\n')[0]).toBe(`1 sample of ${url}`)
})

it('a number flag of blanks alone is still refused, quoted as given', async () => {
  const run = await runMain(['probe', 'http://127.0.0.1:9/', '--samples', ' '])
  expect(run.code).toBe(2)
  expect(run.stderr).toBe(
    "hourglass probe: --samples must be a whole number from 1 to 10000, got ' '\n",
  )
})
