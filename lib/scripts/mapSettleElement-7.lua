--[[
  Settle one element of a fan-out map, in one round trip, fenced by the element's lease:

  1. check the lease token;
  2. store the record by index (an overwrite moves the per-status counts from the old status to
     the new one) and its status; store the element's final state, or drop it;
  3. the first failed element of an atomic map records its index, and moves the dispatch offset
     to the end: every undispatched element (from `settledFrom` on) counts as skipped;
  4. advance `low` (first index without a record: where the stalled scan starts);
  5. release the lease;
  6. slide the window: reserve one more index when any is left;
  7. compute the progress and, once the map is done, claim the owner signal (exactly once).

  Input:
    KEYS[1]  meta      STRING MapMeta (JSON)
    KEYS[2]  counters  HASH   total, atomic, offset, low, succeeded, failed, halted, skipped,
                              settledFrom, failedIndex, signalled
    KEYS[3]  inputs    HASH
    KEYS[4]  records   HASH   index -> ElementRecord (JSON)
    KEYS[5]  statuses  HASH   index -> record status
    KEYS[6]  states    HASH   index -> element RunState (JSON)
    KEYS[7]  lease     STRING the element's lease token

    ARGV[1]  index
    ARGV[2]  lease token
    ARGV[3]  record (JSON)
    ARGV[4]  record status: completed | failed | halted | skipped
    ARGV[5]  final state (JSON) to keep for rollback; "" to drop any stored state
    ARGV[6]  retention TTL (ms), re-stamped on KEYS[1..6]

  Output:
    {signal, total, dispatched, settled, succeeded, failed, halted, skipped, failedIndex, done,
     next...}   signal is 1 for the one caller that must resume the owner; failedIndex is -1 when
                none; done is 1 or 0; next are the indices to dispatch now (zero or one)
    -1  lease lost: nothing written
    -2  invalid argument
    -3  the map is not stored
]]
--- @include "touch"
--- @include "mapProgress"
local index = tonumber(ARGV[1])
local ttl = tonumber(ARGV[6])
if not index or not ttl or ttl <= 0 then
  return -2
end
local metaKey, countersKey, recordsKey, statusesKey, statesKey, leaseKey =
  KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
if redis.call("GET", leaseKey) ~= ARGV[2] then
  return -1
end
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end

local COUNTER = { completed = "succeeded", failed = "failed", halted = "halted" }
local field, status = ARGV[1], ARGV[4]
local previous = redis.call("HGET", statusesKey, field)
if previous then
  redis.call("HINCRBY", countersKey, COUNTER[previous] or "skipped", -1)
end
redis.call("HSET", recordsKey, field, ARGV[3])
redis.call("HSET", statusesKey, field, status)
redis.call("HINCRBY", countersKey, COUNTER[status] or "skipped", 1)
if ARGV[5] ~= "" then
  redis.call("HSET", statesKey, field, ARGV[5])
else
  redis.call("HDEL", statesKey, field)
end

local c = redis.call("HMGET", countersKey, "atomic", "failedIndex", "offset", "total", "low")
local offset = tonumber(c[3]) or 0
local total = tonumber(c[4]) or 0
if status == "failed" and c[1] == "1" and not c[2] then
  redis.call("HSET", countersKey, "failedIndex", index, "settledFrom", offset, "offset", total)
  offset = total
end

local low = tonumber(c[5]) or 0
if index == low then
  while redis.call("HEXISTS", recordsKey, low) == 1 do
    low = low + 1
  end
  redis.call("HSET", countersKey, "low", low)
end

redis.call("DEL", leaseKey)

local nextIndex = nil
if offset < total then
  nextIndex = redis.call("HINCRBY", countersKey, "offset", 1) - 1
end

local progress = mapProgress(countersKey, recordsKey)
local signal = 0
if progress[9] == 1 and redis.call("HSETNX", countersKey, "signalled", 1) == 1 then
  signal = 1
end
touch({metaKey, countersKey, KEYS[3], recordsKey, statusesKey, statesKey}, ttl)

local out = {signal}
for i = 1, 9 do
  out[i + 1] = progress[i]
end
if nextIndex then
  out[11] = nextIndex
end
return out
