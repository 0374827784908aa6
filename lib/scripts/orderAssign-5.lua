--[[
  Take the next nonce of an ordered lock (1, 2, ...) and stamp its heartbeat. Nonce 1 starts a
  batch: it bumps the epoch, which fences the stragglers of earlier batches (see orderTurn-5.lua).
  Every key is kept `ttl` ms from now, but the epoch at least `epochTtl` (it must outlive the
  batches it fences: restarting at 1 would let an old straggler match).

  Input:
    KEYS[1]  next       STRING the last nonce assigned
    KEYS[2]  last       STRING the last nonce completed (0 when none)
    KEYS[3]  assigned   HASH   nonce -> its last heartbeat (ms, Redis time), while not completed
    KEYS[4]  failed     STRING the smallest nonce that failed (absent when none)
    KEYS[5]  epoch      STRING the batch's epoch; the only key a drain keeps

    ARGV[1]  ttl (ms)
    ARGV[2]  epochTtl (ms, >= ttl)

  Output:
    {nonce, epoch}
    -2      invalid argument
]]
--- @include "now"
local ttl = tonumber(ARGV[1])
local epochTtl = tonumber(ARGV[2])
if not ttl or ttl <= 0 or not epochTtl or epochTtl < ttl then
  return -2
end
local now = nowMs()
local nonce = redis.call("INCR", KEYS[1])
redis.call("PEXPIRE", KEYS[1], ttl)
if redis.call("EXISTS", KEYS[2]) == 0 then
  redis.call("SET", KEYS[2], 0, "PX", ttl)
else
  redis.call("PEXPIRE", KEYS[2], ttl)
end
local epoch
if nonce == 1 or redis.call("EXISTS", KEYS[5]) == 0 then
  epoch = redis.call("INCR", KEYS[5])
else
  epoch = tonumber(redis.call("GET", KEYS[5]))
end
redis.call("PEXPIRE", KEYS[5], epochTtl)
redis.call("HSET", KEYS[3], nonce, now)
redis.call("PEXPIRE", KEYS[3], ttl)
redis.call("PEXPIRE", KEYS[4], ttl)
return {nonce, epoch}
