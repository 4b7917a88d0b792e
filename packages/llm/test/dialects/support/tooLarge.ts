/**
 * OpenAI's answer to one request bigger than the organisation's whole TPM
 * limit, as users report it (aider#1880, shell_gpt#653, gpt-researcher#585,
 * big-AGI#636): a 429 with the rate limit's code and type, and a message that
 * says no wait will help.
 */
export const TOO_LARGE = {
  error: {
    message:
      'Request too large for gpt-4o in organization org-2itOgSdqw0DhUYp0QyLhttLL on tokens per min (TPM): Limit 30000, Requested 36278. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.',
    type: 'tokens',
    param: null,
    code: 'rate_limit_exceeded',
  },
}

/** What OpenAI sends beside it: the token window is nearly untouched, it resets at once. */
export const TOO_LARGE_HEADERS = {
  'x-ratelimit-limit-tokens': '30000',
  'x-ratelimit-remaining-tokens': '29990',
  'x-ratelimit-reset-tokens': '20ms',
}
