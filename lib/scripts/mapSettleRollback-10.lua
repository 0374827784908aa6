--[[
  Record the rollback outcome of one element of a fan-out map (the first outcome wins), release
  its lease if the token still holds it, reserve the next element to undo, and claim the owner
  signal (exactly once) when every element to undo has reported.

  Input:
    KEYS[1]   meta               STRING
    KEYS[2]   counters           HASH
    KEYS[3]   inputs             HASH
    KEYS[4]   records            HASH
    KEYS[5]   statuses           HASH
    KEYS[6]   states             HASH
    KEYS[7]   rollback           HASH   total, offset, signalled
    KEYS[8]   rollback order     LIST   element indices to undo, in order
    KEYS[9]   rollback outcomes  HASH   index -> RollbackFailure[] (JSON)
    KEYS[10]  lease              STRING the element's lease token

    ARGV[1]  index
    ARGV[2]  failures (JSON array; "[]" when the element was undone cleanly)
    ARGV[3]  lease token; "" when the caller holds no lease
    ARGV[4]  retention TTL (ms), re-stamped on KEYS[1..9]

  Output:
    {signal, next...}  signal is 1 for the one caller that must resume the owner; next are the
                       element indices to dispatch now (zero or one). {0} when no rollback started.
    -2  invalid argument
    -3  the map is not stored
]]
--- @include "touch"
local ttl = tonumber(ARGV[4])
if not tonumber(ARGV[1]) or not ttl or ttl <= 0 then
  return -2
end
local countersKey, rollbackKey, orderKey, outcomesKey, leaseKey = KEYS[2], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end
if redis.call("EXISTS", rollbackKey) == 0 then
  return {0}
end
redis.call("HSETNX", outcomesKey, ARGV[1], ARGV[2])
if ARGV[3] ~= "" and redis.call("GET", leaseKey) == ARGV[3] then
  redis.call("DEL", leaseKey)
end

local r = redis.call("HMGET", rollbackKey, "total", "offset")
local total = tonumber(r[1]) or 0
local offset = tonumber(r[2]) or 0
local out = {0}
if offset < total then
  out[2] = tonumber(redis.call("LINDEX", orderKey, offset))
  redis.call("HINCRBY", rollbackKey, "offset", 1)
end
if redis.call("HLEN", outcomesKey) >= total and redis.call("HSETNX", rollbackKey, "signalled", 1) == 1 then
  out[1] = 1
end
touch({KEYS[1], countersKey, KEYS[3], KEYS[4], KEYS[5], KEYS[6], rollbackKey, orderKey, outcomesKey}, ttl)
return out
