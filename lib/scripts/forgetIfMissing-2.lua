--[[
  Drop a run from its shard's index when its record is gone (its retention TTL passed while it
  was not terminal). Called by load() after finding no record, so the index heals as sweepers
  read it. Atomic, so a record written meanwhile is never unindexed.

  Input:
    KEYS[1]  run record   HASH
    KEYS[2]  shard index  ZSET

    ARGV[1]  run id

  Output:
    1  the record is missing (the index entry, if any, was removed)
    0  the record exists: nothing changed
]]
if redis.call("EXISTS", KEYS[1]) == 1 then
  return 0
end
redis.call("ZREM", KEYS[2], ARGV[1])
return 1
