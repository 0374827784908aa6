--[[
  Mark a run broken: replace its record with a failed one (built by the caller, keeping every
  field of the old record that could be read: inputs, results, undo stack, trace) and drop it from its shard's index. Idempotent: the first reason wins; while
  the record is still the broken one, later calls change nothing. A missing record stays missing
  (its index entry, if any, is removed).

  Input:
    KEYS[1]  run record   HASH
    KEYS[2]  shard index  ZSET

    ARGV[1]  run id
    ARGV[2]  status of the broken record ("failed")
    ARGV[3]  retention TTL (ms)
    ARGV[4 ..] field, value, field, value, ...: the broken record (see run-record.codec.ts)

  Output:
     1  marked
     0  already broken: nothing changed
     2  no record: nothing to mark
    -2  invalid argument
]]
local contextTtl = tonumber(ARGV[3])
if not contextTtl or contextTtl <= 0 or (#ARGV - 3) % 2 ~= 0 then
  return -2
end

redis.call("ZREM", KEYS[2], ARGV[1])
if redis.call("EXISTS", KEYS[1]) == 0 then
  return 2
end
-- A key of another type (written by something else) is no run record: replace it.
local isHash = redis.call("TYPE", KEYS[1]).ok == "hash"
if isHash and redis.call("HEXISTS", KEYS[1], "broken") == 1 then
  return 0
end
-- The broken record replaces the old one; it carries every field of it that could be read.
redis.call("DEL", KEYS[1])
local CHUNK = 200
for i = 4, #ARGV, 2 * CHUNK do
  redis.call("HSET", KEYS[1], unpack(ARGV, i, math.min(i + 2 * CHUNK - 1, #ARGV)))
end
redis.call("HSET", KEYS[1], "status", ARGV[2], "terminal", "1", "broken", "1")
redis.call("PEXPIRE", KEYS[1], contextTtl)
return 1
