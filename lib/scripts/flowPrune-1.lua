--[[
  Drop a key from a reactor's flow key index when its last activity (its score) is older than
  `idle` ms: more than `idle` ms before now. The caller has checked, on the key's own slot, that
  the key holds no live and no queued run (the index lives on another slot, so that check cannot
  be made here); an enter or leave that lands in between refreshes the score after its script, so
  it either keeps the key here (fresh score) or adds it back (its ZADD comes after this ZREM).

  Input:
    KEYS[1]  index    ZSET   key -> last activity (ms, Redis time)

    ARGV[1]  key
    ARGV[2]  idle (ms, integer >= 0)

  Output:
    1     dropped
    0     kept (not listed, or active lately)
    -2    invalid argument
]]
--- @include "now"
local idle = tonumber(ARGV[2])
if not idle or idle < 0 or idle % 1 ~= 0 then
  return -2
end
local score = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not score or nowMs() - tonumber(score) <= idle then
  return 0
end
redis.call("ZREM", KEYS[1], ARGV[1])
return 1
