--[[
  Extend a run's lease, only for the holder of its token, and read the run's cancel request in the
  same round trip: the executing process's periodic extension is how it learns of a cancel asked
  by another process while a step runs (it then aborts the step's signal).

  Input:
    KEYS[1]  run lease   STRING the holder's token
    KEYS[2]  run record  HASH   field `cancel`: a cancel request's reason (see requestCancel-1.lua)

    ARGV[1]  token
    ARGV[2]  new TTL (ms) from now

  Output:
    {1}          extended; no cancel request
    {1, reason}  extended; the run holds a cancel request with this reason
    {0}          not held by this token (expired, released or taken): nothing changed
    -2           invalid argument
]]
local ttl = tonumber(ARGV[2])
if not ttl or ttl <= 0 then
  return -2
end
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return {0}
end
redis.call("PEXPIRE", KEYS[1], ttl)
local cancel = redis.call("HGET", KEYS[2], "cancel")
if cancel then
  return {1, cancel}
end
return {1}
