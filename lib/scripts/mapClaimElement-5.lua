--[[
  Claim one element of a fan-out map: take its lease and read what the element job needs, in one
  round trip. An element that already has a record (a duplicate delivery), or a map that is not
  stored, is `done` and its lease is not taken.

  Input:
    KEYS[1]  counters  HASH   field failedIndex is set once an atomic map failed
    KEYS[2]  records   HASH   index -> ElementRecord (JSON)
    KEYS[3]  inputs    HASH   index -> element inputs (JSON)
    KEYS[4]  states    HASH   index -> element RunState (JSON), kept between attempts
    KEYS[5]  lease     STRING the element's lease token

    ARGV[1]  index
    ARGV[2]  lease token (random, chosen by the caller)
    ARGV[3]  lease TTL (ms)

  Output:
    {0}                                the lease is held by someone else; nothing read
    {1, 1}                             done: the element has a record, or the map is not stored
    {1, 0, input, state, skip}         lease taken; input and state are JSON or nil; skip is 1
                                       when an atomic map has failed (settle it as skipped)
    -2                                 invalid argument
]]
local ttl = tonumber(ARGV[3])
if not ttl or ttl <= 0 then
  return -2
end
local countersKey, recordsKey = KEYS[1], KEYS[2]
if redis.call("EXISTS", countersKey) == 0 or redis.call("HEXISTS", recordsKey, ARGV[1]) == 1 then
  return {1, 1}
end
if not redis.call("SET", KEYS[5], ARGV[2], "NX", "PX", ttl) then
  return {0}
end
return {
  1,
  0,
  redis.call("HGET", KEYS[3], ARGV[1]),
  redis.call("HGET", KEYS[4], ARGV[1]),
  redis.call("HEXISTS", countersKey, "failedIndex"),
}
