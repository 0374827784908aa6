--[[
  Take a re-entrant, fenced lock. A free lock (no hash: never taken, released to zero, or expired)
  goes to the caller under a new fence, the next value of the lock's fence counter; the owner
  taking it again counts one more take; both refresh the lock's TTL. Another owner is refused.

  The fence counter is a separate key that outlives the lock (its TTL, at least the lock's, is
  refreshed on every take), so fences keep growing across owners and expiries: a holder whose lock
  expired can never match a later owner's fence.

  Input:
    KEYS[1]  lock           HASH   owner, count (takes so far), fence; PX = the lock's TTL
    KEYS[2]  fence counter  STRING the last fence given; PX = ARGV[3]

    ARGV[1]  owner
    ARGV[2]  TTL (ms) of the lock
    ARGV[3]  TTL (ms) of the fence counter (>= ARGV[2])

  Output:
    {1, fence, count}       taken by the owner: count 1 for a new owner, more when re-entered
    {0, holder, ttl}        held by another owner, for ttl ms more (PTTL, at least 1)
    -2                      invalid argument
]]
local ttl = tonumber(ARGV[2])
local counterTtl = tonumber(ARGV[3])
if not ttl or ttl <= 0 or not counterTtl or counterTtl < ttl then
  return -2
end
local holder = redis.call("HGET", KEYS[1], "owner")
if holder and holder ~= ARGV[1] then
  return {0, holder, math.max(redis.call("PTTL", KEYS[1]), 1)}
end
local fence
local count = 1
if holder then
  count = redis.call("HINCRBY", KEYS[1], "count", 1)
  fence = tonumber(redis.call("HGET", KEYS[1], "fence"))
else
  fence = redis.call("INCR", KEYS[2])
  redis.call("HSET", KEYS[1], "owner", ARGV[1], "count", 1, "fence", fence)
end
redis.call("PEXPIRE", KEYS[1], ttl)
redis.call("PEXPIRE", KEYS[2], counterTtl)
return {1, fence, count}
