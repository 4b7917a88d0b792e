import { type FaultPlan, faultServer } from '@hourglass/testkit'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import type { RetryOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatResponse } from '../../src/types.js'

/**
 * One `callModel` (whole, or streamed with `stream`) against a fault server
 * playing `plan`, through the adapter `model` builds for its URL, with no
 * deadline, admission or retry budget: its response or error, the attempt
 * records and how many requests the server got.
 */
export async function callOnFault(
  plan: FaultPlan,
  model: (baseURL: string) => ModelAdapter,
  { stream = false, retry = {} }: { stream?: boolean; retry?: RetryOptions } = {},
): Promise<{
  response: ChatResponse | undefined
  error: unknown
  records: AttemptRecord[]
  requests: number
}> {
  const server = await faultServer(plan)
  const records: AttemptRecord[] = []
  try {
    const options = {
      models: [model(server.url)],
      deadline: false as const,
      limits: { admission: false as const },
      retry: { budgets: false as const, ...retry },
      onAttempt: (record: AttemptRecord) => records.push(record),
    }
    const request = {
      messages: [{ role: 'user' as const, content: 'summarise it all' }],
      maxTokens: 64,
    }
    const pending: Promise<ChatResponse> = stream
      ? callModel({ ...options, request: { ...request, stream: true } }).result
      : callModel({ ...options, request })
    const outcome = await pending.then(
      (response) => ({ response, error: undefined }),
      (error: unknown) => ({ response: undefined, error }),
    )
    return { ...outcome, records, requests: server.records.length }
  } finally {
    await server.close()
  }
}
