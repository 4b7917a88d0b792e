import type { ChainFigures, WaterfallFigures } from './summarize.js'

/** Everything `hourglass demo --json` prints. */
export interface DemoFigures {
  seed: number
  budgetsMs: number[]
  /** The client waits this long past its deadline before giving up. */
  graceMs: number
  /** Wall time of the run. */
  elapsedMs: number
  toolkit: ChainFigures
  naive: ChainFigures
  waterfall: WaterfallFigures | null
}
