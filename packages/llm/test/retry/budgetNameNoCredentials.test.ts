import { expect, it } from 'vitest'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'

// A retry budget is named by the adapter's name and base URL, and
// `providers()` lists those names — what an operator exports as a metric
// label or prints. A base URL with credentials (`https://user:pass@proxy/v1`,
// which the adapters accept) put the password in every name listed.

const PASSWORD = 'MARK-pw-31c7a0'

it('a base URL with credentials names its budget without them', () => {
  const budgets = new RetryBudgetRegistry({ maxTokens: 4 })
  budgets.forProvider({ name: 'openai', baseURL: `https://team:${PASSWORD}@proxy.example/v1` })
  expect(budgets.providers()).toEqual(['openai https://proxy.example/v1'])
  expect(budgets.providers().join(' ')).not.toContain(PASSWORD)
})

it('the same endpoint with and without credentials shares one budget (it protects the endpoint)', () => {
  const budgets = new RetryBudgetRegistry({ maxTokens: 4 })
  const a = budgets.forProvider({
    name: 'openai',
    baseURL: `https://u:${PASSWORD}@proxy.example/v1/`,
  })
  const b = budgets.forProvider({ name: 'openai', baseURL: 'https://PROXY.example:443/v1' })
  expect(a).toBe(b)
})

it('a base URL that does not parse is named as it was (the adapter refuses it before sending)', () => {
  const budgets = new RetryBudgetRegistry({ maxTokens: 4 })
  budgets.forProvider({ name: 'openai', baseURL: 'not a url/' })
  expect(budgets.providers()).toEqual(['openai not a url'])
})
