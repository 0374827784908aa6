--[[
  Bind a correlation id of a reactor to a run, and take the resume mailed to it for one interrupt
  in the same step. Refused while the id is bound to another run; the same run refreshes its
  binding, and `replacing` takes it over from a run known to be gone or finished.

  Input:
    KEYS[1]  binding  STRING the bound run id, PX = retention
    KEYS[2]  mailbox  HASH   interrupt path -> claim (JSON), mailed before a run bound the id; one
                             TTL for the whole mailbox (see mailResume-2.lua)

    ARGV[1]  run id to bind
    ARGV[2]  interrupt path whose mailed resume to take
    ARGV[3]  retention TTL (ms) of the binding
    ARGV[4]  run id the binding may be taken over from; "" for none

  Output:
    {1}           bound; nothing was mailed for the path
    {1, claim}    bound; the resume mailed for the path (JSON), now removed from the mailbox
    {0, runId}    refused: the id is bound to that other run
    -2            invalid argument
]]
local retention = tonumber(ARGV[3])
if not retention or retention <= 0 then
  return -2
end
local runId = ARGV[1]
local bound = redis.call("GET", KEYS[1])
if bound and bound ~= runId and bound ~= ARGV[4] then
  return {0, bound}
end
redis.call("SET", KEYS[1], runId, "PX", retention)
local early = redis.call("HGET", KEYS[2], ARGV[2])
if not early then
  return {1}
end
redis.call("HDEL", KEYS[2], ARGV[2])
return {1, early}
