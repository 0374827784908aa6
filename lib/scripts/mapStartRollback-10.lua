--[[
  Start (once) the distributed rollback of a fan-out map. The elements to undo are the completed
  ones with a stored final state, highest index first; the order is stored as a list, the first
  `batchSize` positions are reserved, and the map is (re)opened in its shard's index so that the
  sweeper watches the rollback.

  Input:
    KEYS[1]   meta               STRING
    KEYS[2]   counters           HASH   field createdAt
    KEYS[3]   inputs             HASH
    KEYS[4]   records            HASH
    KEYS[5]   statuses           HASH   index -> record status
    KEYS[6]   states             HASH   index -> element RunState (JSON)
    KEYS[7]   rollback           HASH   total, offset, signalled
    KEYS[8]   rollback order     LIST   element indices to undo, in order
    KEYS[9]   rollback outcomes  HASH   index -> RollbackFailure[] (JSON)
    KEYS[10]  open maps          ZSET   member = map id, score = createdAt (ms)

    ARGV[1]  map id
    ARGV[2]  batch size
    ARGV[3]  retention TTL (ms), re-stamped on KEYS[1..9]

  Output:
    {i, ...}  the first element indices to dispatch (empty when the rollback had started)
    -2        invalid argument
    -3        the map is not stored
]]
--- @include "touch"
local batch = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
if not batch or not ttl or ttl <= 0 then
  return -2
end
local countersKey, statusesKey, statesKey, rollbackKey, orderKey =
  KEYS[2], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end
if redis.call("EXISTS", rollbackKey) == 1 then
  return {}
end

local indices = redis.call("HKEYS", statesKey)
local order = {}
local i = 1
while i <= #indices do
  local last = math.min(#indices, i + 999)
  local fields = {}
  for j = i, last do
    fields[#fields + 1] = indices[j]
  end
  local statuses = redis.call("HMGET", statusesKey, unpack(fields))
  for j = 1, #fields do
    if statuses[j] == "completed" then
      order[#order + 1] = tonumber(fields[j])
    end
  end
  i = last + 1
end
table.sort(order, function(a, b)
  return a > b
end)

redis.call("DEL", orderKey)
i = 1
while i <= #order do
  local last = math.min(#order, i + 999)
  local slice = {}
  for j = i, last do
    slice[#slice + 1] = order[j]
  end
  redis.call("RPUSH", orderKey, unpack(slice))
  i = last + 1
end

local take = math.max(0, math.min(math.floor(batch), #order))
redis.call("HSET", rollbackKey, "total", #order, "offset", take)
redis.call("ZADD", KEYS[10], tonumber(redis.call("HGET", countersKey, "createdAt")) or 0, ARGV[1])
touch({KEYS[1], countersKey, KEYS[3], KEYS[4], statusesKey, statesKey, rollbackKey, orderKey, KEYS[9]}, ttl)

local out = {}
for j = 1, take do
  out[j] = order[j]
end
return out
