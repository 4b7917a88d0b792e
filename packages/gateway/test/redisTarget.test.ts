import { expect, it } from 'vitest'
import { describeRedisTarget } from '../src/redisTarget.js'

// The warning that Redis is unreachable names where ioredis dialled: it said
// `localhost` for a host given in the query, dropped the query's port, and
// wrote an IPv6 host without brackets (`::1:6380`).
it.each([
  ['redis://:pw@10.0.0.5:6380/2', '10.0.0.5:6380'],
  ['redis://10.0.0.5', '10.0.0.5'],
  ['redis://10.0.0.5?port=6390', '10.0.0.5:6390'],
  ['redis://?host=127.0.0.3&port=6381', '127.0.0.3:6381'],
  ['redis://?host=10.0.0.1&host=10.0.0.2', '10.0.0.2'],
  ['redis://?host=::1&port=6380', '[::1]:6380'],
  ['rediss://[::1]:6380', '[::1]:6380'],
  ['redis://localhost?path=/run/redis.sock', '/run/redis.sock'],
  ['redis://', 'localhost'],
])('%s is named %s', (url, shown) => {
  expect(describeRedisTarget(url)).toBe(shown)
})
