--[[
  Take one of `limit` slots of a leased semaphore for a holder. Leases that are over are swept
  first, so a crashed holder's slot comes back when its lease ends. A holder already in the set
  takes its slot again (its lease is refreshed; it never counts twice); a new holder gets a slot
  while fewer than `limit` are held. The set is kept as long as its longest lease.

  Input:
    KEYS[1]  semaphore  ZSET   member = holder, score = expiry of its lease (ms, Redis time);
                               PX = the longest lease

    ARGV[1]  holder
    ARGV[2]  limit (> 0)
    ARGV[3]  lease (ms)

  Output:
    {1, holders}              taken; holders: how many hold a slot now
    {0, holders, retryAfter}  every slot is held; the first lease ends in retryAfter ms (>= 1)
    -2                        invalid argument
]]
--- @include "now"
--- @include "semaphore"
local limit = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
if not limit or limit < 1 or not lease or lease <= 0 then
  return -2
end
local now = nowMs()
prune(KEYS[1], now)
local holders = redis.call("ZCARD", KEYS[1])
if holders < limit or redis.call("ZSCORE", KEYS[1], ARGV[1]) then
  redis.call("ZADD", KEYS[1], now + lease, ARGV[1])
  keepForLeases(KEYS[1], now)
  return {1, redis.call("ZCARD", KEYS[1])}
end
local first = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
return {0, holders, tonumber(first[2]) - now}
