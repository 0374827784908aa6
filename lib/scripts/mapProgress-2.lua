--[[
  The progress of a fan-out map (counts judged by stored records).

  Input:
    KEYS[1]  counters  HASH
    KEYS[2]  records   HASH  index -> ElementRecord (JSON)

  Output:
    {total, dispatched, settled, succeeded, failed, halted, skipped, failedIndex, done}
        failedIndex is -1 when none; done is 1 or 0
    -3  the map is not stored
]]
--- @include "mapProgress"
local countersKey = KEYS[1]
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end
return mapProgress(countersKey, KEYS[2])
