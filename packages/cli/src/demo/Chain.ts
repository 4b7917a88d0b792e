import type { SliceReport } from '@hourglass/core'
import type { FakeProvider } from '@hourglass/testkit'
import type { WorkLog } from './WorkLog.js'

/** Header carrying the demo's request number through every hop (a correlation id). */
export const CASE_ID_HEADER = 'x-client-request-id'

/** One running copy of the three-hop chain in front of its own fake provider. */
export interface Chain {
  name: 'toolkit' | 'naive'
  /** The edge's `POST /ask`. */
  url: string
  provider: FakeProvider
  log: WorkLog
  /** The API service's slice reports by request id (toolkit chain only). */
  slices: Map<string, SliceReport[]>
  /**
   * Stops the chain. `drainMs` (default 0): how long requests in flight at
   * the edge get to be answered, the hops behind it serving them meanwhile.
   */
  close(drainMs?: number): Promise<void>
}
