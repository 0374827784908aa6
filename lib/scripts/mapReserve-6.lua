--[[
  Reserve up to `count` more element indices of a fan-out map to dispatch, never past `total`.

  Input:
    KEYS[1]  meta      STRING MapMeta (JSON)
    KEYS[2]  counters  HASH   total, offset, ...
    KEYS[3]  inputs    HASH
    KEYS[4]  records   HASH
    KEYS[5]  statuses  HASH
    KEYS[6]  states    HASH

    ARGV[1]  count
    ARGV[2]  retention TTL (ms), re-stamped on every key above

  Output:
    {i, ...}  the reserved indices, ascending (empty when none is left)
    -2        invalid argument
    -3        the map is not stored
]]
--- @include "touch"
local count = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
if not count or not ttl or ttl <= 0 then
  return -2
end
local countersKey = KEYS[2]
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end
local c = redis.call("HMGET", countersKey, "offset", "total")
local offset = tonumber(c[1]) or 0
local take = math.min(math.floor(count), (tonumber(c[2]) or 0) - offset)
local out = {}
if take > 0 then
  redis.call("HINCRBY", countersKey, "offset", take)
  for i = 0, take - 1 do
    out[#out + 1] = offset + i
  end
end
touch({KEYS[1], countersKey, KEYS[3], KEYS[4], KEYS[5], KEYS[6]}, ttl)
return out
