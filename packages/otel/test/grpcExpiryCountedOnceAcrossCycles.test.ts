import { Deadline, ManualClock } from '@hourglass/core'
import { grpcChannels } from '@hourglass/grpc'
import { HourglassInstrumentation } from '@hourglass/otel'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A dark-mode gRPC call publishes two expiries for one deadline: ours
 * (`observed`), then grpc-js's own timer's answer (`status`). It is counted
 * once — also when the instrumentation is disable()d and enable()d, or given
 * its meter provider again (as NodeSDK does), between the two: the calls
 * already counted are the instrumentation's, not one set of handlers'.
 */

let otel: ReturnType<typeof setupOtel>
let instrumentation: HourglassInstrumentation

beforeEach(() => {
  otel = setupOtel()
  instrumentation = new HourglassInstrumentation({ enabled: false })
  instrumentation.setTracerProvider(otel.tracerProvider)
  instrumentation.setMeterProvider(otel.meterProvider)
  instrumentation.enable()
})
afterEach(async () => {
  instrumentation.disable()
  await otel.shutdown()
})

function expiry(deadline: Deadline, action: 'observed' | 'status') {
  grpcChannels.serverExpire.publish(() => ({
    deadline,
    method: '/shop.Quotes/Ask',
    budgetMs: 1000,
    elapsedMs: 1001,
    stage: 'handler',
    action,
  }))
}

describe('hourglass.deadline.exceeded: a dark-mode gRPC expiry across instrumentation cycles', () => {
  const cycles: Array<[string, () => void]> = [
    ['nothing', () => {}],
    [
      'disable() then enable()',
      () => {
        instrumentation.disable()
        instrumentation.enable()
      },
    ],
    [
      'setMeterProvider() with the same provider',
      () => instrumentation.setMeterProvider(otel.meterProvider),
    ],
  ]
  for (const [name, cycle] of cycles) {
    it(`counts the call once with ${name} between its two expiry messages`, async () => {
      const deadline = Deadline.after(1000, { observe: true, clock: new ManualClock() })
      expiry(deadline, 'observed')
      cycle()
      expiry(deadline, 'status')
      expect(
        await otel.counter('hourglass.deadline.exceeded', {
          'hourglass.deadline.stage': 'handler',
        }),
      ).toBe(1)
      deadline.dispose()
    })
  }
})
