--[[
  A nonce of an ordered lock finished: when it is the next one (last + 1) it becomes the last
  completed, which gives the next nonce its turn; otherwise (it went after a poison pill skipped
  it, or out of turn) only its heartbeat entry goes. A failure of a nonce not yet counted completed
  is remembered, the smallest failed nonce winning. When the last assigned nonce completes, the key
  is reset (drain): every key but the epoch is deleted, so the next assignment starts a new batch at
  nonce 1.

  No-op for a stale epoch and for a drained key.

  Input:
    KEYS[1]  next       STRING the last nonce assigned (see orderAssign-5.lua)
    KEYS[2]  last       STRING the last nonce completed
    KEYS[3]  assigned   HASH   nonce -> its last heartbeat (ms)
    KEYS[4]  failed     STRING the smallest nonce that failed; PX = ARGV[4] when written
    KEYS[5]  epoch      STRING the batch's epoch

    ARGV[1]  nonce
    ARGV[2]  epoch of the nonce
    ARGV[3]  "1" when the nonce failed, else "0"
    ARGV[4]  ttl (ms) of the failure mark

  Output:
     2  completed, and the key was drained (reset)
     1  recorded
     0  nothing changed: stale epoch, or drained key
    -2  invalid argument
]]
--- @include "order"
local nonce = tonumber(ARGV[1])
local epoch = tonumber(ARGV[2])
local ttl = tonumber(ARGV[4])
if not nonce or nonce < 1 or not epoch or not ttl or ttl <= 0 then
  return -2
end
if tonumber(redis.call("GET", KEYS[5])) ~= epoch then
  return 0
end
if redis.call("EXISTS", KEYS[1]) == 0 and redis.call("EXISTS", KEYS[2]) == 0 then
  return 0
end
local last = tonumber(redis.call("GET", KEYS[2]) or "0")
if ARGV[3] == "1" and nonce > last then
  local first = tonumber(redis.call("GET", KEYS[4]))
  if not first or nonce < first then
    redis.call("SET", KEYS[4], nonce, "PX", ttl)
  end
end
redis.call("HDEL", KEYS[3], nonce)
if nonce ~= last + 1 then
  return 1
end
setLast(KEYS[2], KEYS[1], nonce)
local assigned = tonumber(redis.call("GET", KEYS[1]) or "0")
if assigned > 0 and nonce >= assigned then
  redis.call("DEL", KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  return 2
end
return 1
