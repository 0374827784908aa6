--[[
  Save a map element's state between attempts, fenced by the element's lease.

  Input:
    KEYS[1]  meta      STRING
    KEYS[2]  counters  HASH
    KEYS[3]  inputs    HASH
    KEYS[4]  records   HASH
    KEYS[5]  statuses  HASH
    KEYS[6]  states    HASH   index -> element RunState (JSON)
    KEYS[7]  lease     STRING the element's lease token

    ARGV[1]  index
    ARGV[2]  lease token
    ARGV[3]  state (JSON)
    ARGV[4]  retention TTL (ms), re-stamped on KEYS[1..6]

  Output:
     1  written
    -1  lease lost: nothing written
    -2  invalid argument
    -3  the map is not stored
]]
--- @include "touch"
local ttl = tonumber(ARGV[4])
if not ttl or ttl <= 0 then
  return -2
end
if redis.call("GET", KEYS[7]) ~= ARGV[2] then
  return -1
end
local countersKey, statesKey = KEYS[2], KEYS[6]
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end
redis.call("HSET", statesKey, ARGV[1], ARGV[3])
touch({KEYS[1], countersKey, KEYS[3], KEYS[4], KEYS[5], statesKey}, ttl)
return 1
