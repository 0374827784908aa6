--[[
  Mark a run broken: replace its record with a minimal failed one (built by the caller, keeping
  what could be read; written whole in the `state` field, which the codec reads as a whole run) and drop it from its shard's index. Idempotent: the first reason wins; while
  the record is still the broken one, later calls change nothing. A missing record stays missing
  (its index entry, if any, is removed).

  Input:
    KEYS[1]  run record   HASH
    KEYS[2]  shard index  ZSET

    ARGV[1]  run id
    ARGV[2]  failed state (JSON)
    ARGV[3]  status of that state ("failed")
    ARGV[4]  retention TTL (ms)

  Output:
     1  marked
     0  already broken: nothing changed
     2  no record: nothing to mark
    -2  invalid argument
]]
local contextTtl = tonumber(ARGV[4])
if not contextTtl or contextTtl <= 0 then
  return -2
end

redis.call("ZREM", KEYS[2], ARGV[1])
if redis.call("EXISTS", KEYS[1]) == 0 then
  return 2
end
if redis.call("HEXISTS", KEYS[1], "broken") == 1 then
  return 0
end
-- The minimal record replaces every field of the old one (its header holds the whole run).
redis.call("DEL", KEYS[1])
redis.call("HSET", KEYS[1], "state", ARGV[2], "status", ARGV[3], "terminal", "1", "broken", "1")
redis.call("PEXPIRE", KEYS[1], contextTtl)
return 1
