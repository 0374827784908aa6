--[[
  Claim the owner signal of a done fan-out map (the sweeper, when the signal or the owner's resume
  job was lost). At most one caller ever gets it, counting settleElement's claims.

  Input:
    KEYS[1]  meta      STRING
    KEYS[2]  counters  HASH   field signalled
    KEYS[3]  inputs    HASH
    KEYS[4]  records   HASH
    KEYS[5]  statuses  HASH
    KEYS[6]  states    HASH

    ARGV[1]  retention TTL (ms), re-stamped on KEYS[1..6] when claimed

  Output:
     1  claimed: resume the owner
     0  not done, or already signalled
    -2  invalid argument
    -3  the map is not stored
]]
--- @include "touch"
--- @include "mapProgress"
local ttl = tonumber(ARGV[1])
if not ttl or ttl <= 0 then
  return -2
end
local countersKey, recordsKey = KEYS[2], KEYS[4]
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end
if mapProgress(countersKey, recordsKey)[9] ~= 1 then
  return 0
end
if redis.call("HSETNX", countersKey, "signalled", 1) == 0 then
  return 0
end
touch({KEYS[1], countersKey, KEYS[3], recordsKey, KEYS[5], KEYS[6]}, ttl)
return 1
