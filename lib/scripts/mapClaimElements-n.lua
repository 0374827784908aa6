--[[
  Claim elements of a fan-out map: for each, take its lease and read what its job needs, in one
  round trip for the whole chunk of a `map-element` job. An element that already has a record (a
  duplicate delivery), or a map that is not stored, is `done` and its lease is not taken.

  Cancel: once the map's run has a cancel request stored (field `cancel` of its record, written by
  requestCancel-1.lua; the record shares the map's slot), no element that has not started starts:
  an element without a kept state is claimed with `skip` (settled as skipped, never run), and the
  dispatch stops (every element not dispatched yet counts as skipped, as after an atomic map's
  failure: `settledFrom` = offset, offset = total), so the map is done once the elements in flight
  settle. An element with a kept state (it started: it waits for a retry) goes on.

  Input:  (the number of keys varies: 5, then one lease per element)
    KEYS[1]  counters  HASH   offset, total; field failedIndex is set once an atomic map failed,
                              settledFrom once dispatching stopped
    KEYS[2]  records   HASH   index -> ElementRecord (JSON)
    KEYS[3]  inputs    HASH   index -> element inputs (JSON)
    KEYS[4]  states    HASH   index -> element RunState (JSON), kept between attempts
    KEYS[5]  run       HASH   the record of the top-level run holding the map (field `cancel`)
    KEYS[5+i] lease    STRING the lease of the i-th element

    ARGV[1]  lease token (random, chosen by the caller; the same for the chunk)
    ARGV[2]  lease TTL (ms)
    ARGV[2+i] index of the i-th element

  Output:  one entry per element, in order:
    {0}                                the lease is held by someone else; nothing read
    {1}                                done: the element has a record, or the map is not stored
    {2, input, state, skip}            lease taken; input and state are JSON or false; skip is 1
                                       when an atomic map has failed, or when the run is
                                       cancelled and the element has no state (settle it as
                                       skipped)
    -2                                 invalid argument (for the whole call)
]]
local ttl = tonumber(ARGV[2])
local count = #KEYS - 5
if not ttl or ttl <= 0 or count < 1 or #ARGV ~= count + 2 then
  return -2
end
local countersKey, recordsKey, inputsKey, statesKey, runKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local stored = redis.call("EXISTS", countersKey) == 1
local skip = stored and redis.call("HEXISTS", countersKey, "failedIndex") or 0
local cancelled = stored and redis.call("HEXISTS", runKey, "cancel") == 1
if cancelled then
  local c = redis.call("HMGET", countersKey, "offset", "total", "settledFrom")
  local offset, total = tonumber(c[1]) or 0, tonumber(c[2]) or 0
  if not c[3] and offset < total then
    redis.call("HSET", countersKey, "settledFrom", offset, "offset", total)
  end
end
local out = {}
for i = 1, count do
  local index = ARGV[2 + i]
  if not stored or redis.call("HEXISTS", recordsKey, index) == 1 then
    out[i] = {1}
  elseif not redis.call("SET", KEYS[5 + i], ARGV[1], "NX", "PX", ttl) then
    out[i] = {0}
  else
    local state = redis.call("HGET", statesKey, index)
    local skipIt = skip
    if cancelled and not state then
      skipIt = 1
    end
    out[i] = {2, redis.call("HGET", inputsKey, index), state, skipIt}
  end
end
return out
