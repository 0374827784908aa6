--[[
  List a key in a reactor's flow key index, its score the time of this call (its last activity).
  `enter` and `leave` send it with their own script (another slot: the key's), in the same write
  and before it, so the index lists a key before the key can hold a run (a process dying between
  the two leaves at worst a listed key without runs, which a prune drops).

  Input:
    KEYS[1]  index    ZSET   key -> last activity (ms, Redis time)

    ARGV[1]  key

  Output:
    the time written (ms)
]]
--- @include "now"
local now = nowMs()
redis.call("ZADD", KEYS[1], now, ARGV[1])
return now
