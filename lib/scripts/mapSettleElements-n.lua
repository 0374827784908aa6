--[[
  Settle elements of a fan-out map (the chunk of one `map-element` job), in one round trip, each
  fenced by its own lease:

  For each element whose lease the token still holds (the others are reported lost and not
  written):
  1. store the record by index (an overwrite moves the per-status counts from the old status to
     the new one) and its status; store the element's final state, or drop it;
  2. the first failed element of an atomic map records its index, and moves the dispatch offset
     to the end: every undispatched element (from `settledFrom` on) counts as skipped (a
     `settledFrom` set by a cancel, see mapClaimElements-n.lua, is kept);
  3. release the lease.
  Then, once for the chunk:
  4. advance `low` (first index without a record: where the stalled scan starts);
  5. refill the dispatch window, never past total: with one element per job (`chunk` 1) it slides
     by one index per settled element; with more, once at least `chunk` of its `batch` places
     are free (dispatched elements without a record take one each), reserve as many as are free;
  6. compute the progress and, once the map is done, claim the owner signal (exactly once).

  Input:  (the number of keys varies: 6, then one lease per element)
    KEYS[1]  meta      STRING MapMeta (JSON)
    KEYS[2]  counters  HASH   total, atomic, offset, low, succeeded, failed, halted, skipped,
                              settledFrom, failedIndex, signalled, batch, chunk
    KEYS[3]  inputs    HASH
    KEYS[4]  records   HASH   index -> ElementRecord (JSON)
    KEYS[5]  statuses  HASH   index -> record status
    KEYS[6]  states    HASH   index -> element RunState (JSON)
    KEYS[6+i] lease    STRING the lease of the i-th element

    ARGV[1]  retention TTL (ms), re-stamped on KEYS[1..6]
    ARGV[2 + 5(i-1) ..]  for the i-th element: index, lease token, record (JSON),
                         record status (completed | failed | halted | skipped),
                         final state (JSON) to keep for rollback, "" to drop any stored state

  Output:
    {signal, {total, dispatched, settled, succeeded, failed, halted, skipped, failedIndex, done},
     {lost...}, {next...}}
      signal is 1 for the one caller that must resume the owner; failedIndex is -1 when none;
      done is 1 or 0; lost are the indices whose lease was not held (not written); next are the
      indices to dispatch now
    -2  invalid argument
    -3  the map is not stored
]]
--- @include "touch"
--- @include "mapProgress"
local ttl = tonumber(ARGV[1])
local count = #KEYS - 6
if not ttl or ttl <= 0 or count < 1 or #ARGV ~= 1 + 5 * count then
  return -2
end
local metaKey, countersKey, recordsKey, statusesKey, statesKey = KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6]
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end

local COUNTER = { completed = "succeeded", failed = "failed", halted = "halted" }
local c = redis.call("HMGET", countersKey, "atomic", "failedIndex", "offset", "total", "low", "batch", "chunk")
local atomic, failedIndex = c[1] == "1", c[2]
local offset = tonumber(c[3]) or 0
local total = tonumber(c[4]) or 0
local low = tonumber(c[5]) or 0
local lost = {}
local lowSettled = false
for i = 1, count do
  local base = 1 + 5 * (i - 1)
  local field, token, record, status, state =
    ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], ARGV[base + 4], ARGV[base + 5]
  local index = tonumber(field)
  if not index then
    return -2
  end
  local leaseKey = KEYS[6 + i]
  if redis.call("GET", leaseKey) ~= token then
    lost[#lost + 1] = index
  else
    local previous = redis.call("HGET", statusesKey, field)
    if previous then
      redis.call("HINCRBY", countersKey, COUNTER[previous] or "skipped", -1)
    end
    redis.call("HSET", recordsKey, field, record)
    redis.call("HSET", statusesKey, field, status)
    redis.call("HINCRBY", countersKey, COUNTER[status] or "skipped", 1)
    if state ~= "" then
      redis.call("HSET", statesKey, field, state)
    else
      redis.call("HDEL", statesKey, field)
    end
    if status == "failed" and atomic and not failedIndex then
      failedIndex = index
      -- A cancel (mapClaimElements-n.lua) may have stopped the dispatch already: its bound stays.
      redis.call("HSET", countersKey, "failedIndex", index, "offset", total)
      redis.call("HSETNX", countersKey, "settledFrom", offset)
      offset = total
    end
    if index == low then
      lowSettled = true
    end
    redis.call("DEL", leaseKey)
  end
end

if lowSettled then
  while redis.call("HEXISTS", recordsKey, low) == 1 do
    low = low + 1
  end
  redis.call("HSET", countersKey, "low", low)
end

-- Maps created before the window had a size in the counters slide by one.
local batch = tonumber(c[6]) or 1
local chunk = math.max(1, tonumber(c[7]) or 1)
local first, reserved = offset, 0
if offset < total then
  if chunk == 1 then
    -- One element per job: the window slides by one index per settled element.
    reserved = math.min(count - #lost, total - offset)
  else
    local free = batch - (offset - redis.call("HLEN", recordsKey))
    if free >= math.min(chunk, batch) then
      reserved = math.min(free, total - offset)
    end
  end
  if reserved > 0 then
    redis.call("HINCRBY", countersKey, "offset", reserved)
  end
end

local progress = mapProgress(countersKey, recordsKey)
local signal = 0
if progress[9] == 1 and redis.call("HSETNX", countersKey, "signalled", 1) == 1 then
  signal = 1
end
touch({metaKey, countersKey, KEYS[3], recordsKey, statusesKey, statesKey}, ttl)

local nextIndices = {}
for i = 1, reserved do
  nextIndices[i] = first + i - 1
end
return {signal, progress, lost, nextIndices}
