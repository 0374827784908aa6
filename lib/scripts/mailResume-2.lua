--[[
  Mail a resume to a correlation id of a reactor for one interrupt, for the run that binds the id
  later (see bindCorrelationId-2.lua): the first resume per id and interrupt wins. When the id is
  bound to a run (other than one the caller knows to be gone), nothing is mailed and that run is
  answered instead.

  The mailbox has one TTL: it is extended to this resume's TTL, never shortened, so an entry is
  kept at least as long as it was mailed for (and possibly as long as a later one).

  Input:
    KEYS[1]  binding  STRING the bound run id (see bindCorrelationId-2.lua)
    KEYS[2]  mailbox  HASH   interrupt path -> claim (JSON)

    ARGV[1]  interrupt path
    ARGV[2]  the claim (JSON)
    ARGV[3]  TTL (ms) of the resume
    ARGV[4]  a bound run id to ignore (known to be gone); "" for none

  Output:
    {"bound", runId}   nothing mailed: the id is bound to that run
    {"queued"}         mailed
    {"exists"}         nothing mailed: a resume was mailed for this id and interrupt already
    -2                 invalid argument
]]
local ttl = tonumber(ARGV[3])
if not ttl or ttl <= 0 then
  return -2
end
local bound = redis.call("GET", KEYS[1])
if bound and bound ~= ARGV[4] then
  return {"bound", bound}
end
if redis.call("HEXISTS", KEYS[2], ARGV[1]) == 1 then
  return {"exists"}
end
redis.call("HSET", KEYS[2], ARGV[1], ARGV[2])
if redis.call("PTTL", KEYS[2]) < ttl then
  redis.call("PEXPIRE", KEYS[2], ttl)
end
return {"queued"}
