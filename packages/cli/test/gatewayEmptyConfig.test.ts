import { expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// `hourglass gateway --config "$CONFIG"` with CONFIG unset (or `--config=`)
// said `hourglass gateway: : (file): cannot read it (ENOENT)`: a file named
// nothing, which the operator had to decode. An empty --config names itself.

it.each([
  [['gateway', '--config', '']],
  [['gateway', '--config=', '--port', '0']],
  [['gateway', '--config', '  ']],
])(
  'hourglass %j: an empty --config is a bad argument named as such (exit 2, one line)',
  async (args) => {
    const run = await runMain(args)
    expect(run.stderr).toBe(
      'hourglass gateway: --config is empty: give the path of the gateway config (see hourglass gateway --help)\n',
    )
    expect(run.stdout).toBe('')
    expect(run.code).toBe(2)
  },
)
