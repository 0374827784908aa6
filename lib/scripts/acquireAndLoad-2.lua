--[[
  Lock, then load: take a run's lease and, if taken, read the run's record, in one round trip.
  Used when a worker (or the caller) starts executing a run.

  Input:
    KEYS[1]  run lease   STRING the holder's token
    KEYS[2]  run record  HASH   the run's fields (see checkpoint-n.lua)

    ARGV[1]  lease token (random, chosen by the caller)
    ARGV[2]  lease TTL (ms)

  Output:
    {0}                             the lease is held by someone else; nothing read
    {1}                             lease taken; no record (the run expired or never existed)
    {1, field, value, field, ...}   lease taken; the run's fields (HGETALL)
    -2                              invalid argument
]]
local ttl = tonumber(ARGV[2])
if not ttl or ttl <= 0 then
  return -2
end
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ttl) then
  return {0}
end
local fields = redis.call("HGETALL", KEYS[2])
table.insert(fields, 1, 1)
return fields
