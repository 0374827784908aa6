--[[
  Claim elements of a fan-out map: for each, take its lease and read what its job needs, in one
  round trip for the whole chunk of a `map-element` job. An element that already has a record (a
  duplicate delivery), or a map that is not stored, is `done` and its lease is not taken.

  Input:  (the number of keys varies: 4, then one lease per element)
    KEYS[1]  counters  HASH   field failedIndex is set once an atomic map failed
    KEYS[2]  records   HASH   index -> ElementRecord (JSON)
    KEYS[3]  inputs    HASH   index -> element inputs (JSON)
    KEYS[4]  states    HASH   index -> element RunState (JSON), kept between attempts
    KEYS[4+i] lease    STRING the lease of the i-th element

    ARGV[1]  lease token (random, chosen by the caller; the same for the chunk)
    ARGV[2]  lease TTL (ms)
    ARGV[2+i] index of the i-th element

  Output:  one entry per element, in order:
    {0}                                the lease is held by someone else; nothing read
    {1}                                done: the element has a record, or the map is not stored
    {2, input, state, skip}            lease taken; input and state are JSON or false; skip is 1
                                       when an atomic map has failed (settle it as skipped)
    -2                                 invalid argument (for the whole call)
]]
local ttl = tonumber(ARGV[2])
local count = #KEYS - 4
if not ttl or ttl <= 0 or count < 1 or #ARGV ~= count + 2 then
  return -2
end
local countersKey, recordsKey, inputsKey, statesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local stored = redis.call("EXISTS", countersKey) == 1
local skip = stored and redis.call("HEXISTS", countersKey, "failedIndex") or 0
local out = {}
for i = 1, count do
  local index = ARGV[2 + i]
  if not stored or redis.call("HEXISTS", recordsKey, index) == 1 then
    out[i] = {1}
  elseif not redis.call("SET", KEYS[4 + i], ARGV[1], "NX", "PX", ttl) then
    out[i] = {0}
  else
    out[i] = {2, redis.call("HGET", inputsKey, index), redis.call("HGET", statesKey, index), skip}
  end
end
return out
