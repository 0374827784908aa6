--[[
  Stamp an ordered-lock nonce's heartbeat (it is alive), only while it is not completed (it has a
  heartbeat entry) and its epoch is current.

  Input:
    KEYS[1]  epoch      STRING the batch's epoch (see orderAssign-5.lua)
    KEYS[2]  assigned   HASH   nonce -> its last heartbeat (ms, Redis time)

    ARGV[1]  nonce
    ARGV[2]  epoch of the nonce

  Output:
     1  stamped
     0  stale epoch, or the nonce completed (or was skipped): nothing changed
    -2  invalid argument
]]
--- @include "now"
local nonce = tonumber(ARGV[1])
local epoch = tonumber(ARGV[2])
if not nonce or not epoch then
  return -2
end
if tonumber(redis.call("GET", KEYS[1])) ~= epoch or redis.call("HEXISTS", KEYS[2], nonce) == 0 then
  return 0
end
redis.call("HSET", KEYS[2], nonce, nowMs())
return 1
