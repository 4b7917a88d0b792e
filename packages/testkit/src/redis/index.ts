export { redisAvailable } from './redisAvailable.js'
export { type RedisServer, type StartRedisOptions, startRedis } from './startRedis.js'
