--[[
  Create a fan-out map (once): store its metadata, initialise its counters, re-stamp the TTL of
  the inputs stored before it (the source is streamed first), and add it to its shard's index of
  open maps.

  Input:
    KEYS[1]  meta        STRING MapMeta (JSON)
    KEYS[2]  counters    HASH   total, atomic, createdAt, offset, low, succeeded, failed, halted,
                                skipped (settledFrom, failedIndex, signalled: absent until set)
    KEYS[3]  inputs      HASH   index -> element inputs (JSON)
    KEYS[4]  records     HASH   index -> ElementRecord (JSON)
    KEYS[5]  statuses    HASH   index -> record status
    KEYS[6]  states      HASH   index -> element RunState (JSON)
    KEYS[7]  open maps   ZSET   member = map id, score = createdAt (ms)

    ARGV[1]  map id
    ARGV[2]  meta (JSON)
    ARGV[3]  total (number of elements)
    ARGV[4]  atomic: "1" or "0"
    ARGV[5]  createdAt (ms)
    ARGV[6]  retention TTL (ms)
    ARGV[7]  batchSize: the most elements in flight at once (the dispatch window)
    ARGV[8]  elementsPerJob: elements one `map-element` job claims and settles together

  Output:
     1  created
     0  the map exists (a re-run): nothing changed
    -2  invalid argument
]]
--- @include "touch"
local total = tonumber(ARGV[3])
local createdAt = tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])
if not total or total < 0 or not createdAt or not ttl or ttl <= 0 then
  return -2
end
local metaKey, countersKey = KEYS[1], KEYS[2]
if redis.call("EXISTS", metaKey) == 1 then
  return 0
end
redis.call("SET", metaKey, ARGV[2], "PX", ttl)
redis.call("DEL", countersKey)
redis.call("HSET", countersKey, "total", total, "atomic", ARGV[4], "createdAt", createdAt, "offset", 0,
  "low", 0, "succeeded", 0, "failed", 0, "halted", 0, "skipped", 0, "batch", tonumber(ARGV[7]) or 1,
  "chunk", tonumber(ARGV[8]) or 1)
touch({countersKey, KEYS[3], KEYS[4], KEYS[5], KEYS[6]}, ttl)
redis.call("ZADD", KEYS[7], createdAt, ARGV[1])
return 1
