--[[
  Push a semaphore holder's lease to `lease` ms from now, if it still holds a slot (its lease is
  not over). The set is kept as long as its longest lease.

  Input:
    KEYS[1]  semaphore  ZSET   member = holder, score = expiry of its lease (ms, Redis time)

    ARGV[1]  holder
    ARGV[2]  lease (ms)

  Output:
     1  extended
     0  the holder holds no slot (released, or its lease is over): nothing changed
    -2  invalid argument
]]
--- @include "now"
--- @include "semaphore"
local lease = tonumber(ARGV[2])
if not lease or lease <= 0 then
  return -2
end
local now = nowMs()
prune(KEYS[1], now)
if not redis.call("ZSCORE", KEYS[1], ARGV[1]) then
  return 0
end
redis.call("ZADD", KEYS[1], "XX", now + lease, ARGV[1])
keepForLeases(KEYS[1], now)
return 1
