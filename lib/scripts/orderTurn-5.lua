--[[
  Whether a nonce of an ordered lock may go now. It stamps the nonce's heartbeat (while it is not
  completed) and skips dead blockers in one call: a nonce ahead of it that is not completed and
  whose heartbeat is older than `poisonPill` ms (or that has none) counts as completed (poison
  pill).

  In order:
    stale      the nonce's epoch is not the current one (a drain reset the key since it was assigned)
    drained    neither next nor last exists: every assigned nonce completed and the key was reset
    go         it is the nonce's turn (nonce <= last + 1)
    poison_advance
               it is, after skipping dead blockers
    wait       the nonce last + 1 is alive and ahead; retryAfter: when its heartbeat runs out, at most

  Input:
    KEYS[1]  next       STRING the last nonce assigned (see orderAssign-5.lua)
    KEYS[2]  last       STRING the last nonce completed
    KEYS[3]  assigned   HASH   nonce -> its last heartbeat (ms, Redis time)
    KEYS[4]  failed     STRING the smallest nonce that failed
    KEYS[5]  epoch      STRING the batch's epoch

    ARGV[1]  nonce
    ARGV[2]  epoch of the nonce
    ARGV[3]  poisonPill (ms)

  Output:
    {state, retryAfter, last, failed}
        state as above; retryAfter (ms) for `wait`, else 0; last: the last nonce completed and
        failed: the smallest nonce that failed (0 when none), both 0 for `stale` and `drained`
    -2  invalid argument
]]
--- @include "now"
--- @include "order"
local nonce = tonumber(ARGV[1])
local epoch = tonumber(ARGV[2])
local poisonPill = tonumber(ARGV[3])
if not nonce or nonce < 1 or not epoch or not poisonPill or poisonPill <= 0 then
  return -2
end
if tonumber(redis.call("GET", KEYS[5])) ~= epoch then
  return {"stale", 0, 0, 0}
end
if redis.call("EXISTS", KEYS[1]) == 0 and redis.call("EXISTS", KEYS[2]) == 0 then
  return {"drained", 0, 0, 0}
end
local now = nowMs()
local last = tonumber(redis.call("GET", KEYS[2]) or "0")
local failed = tonumber(redis.call("GET", KEYS[4]) or "0")
if nonce > last and redis.call("HEXISTS", KEYS[3], nonce) == 1 then
  redis.call("HSET", KEYS[3], nonce, now)
end
if nonce <= last + 1 then
  return {"go", 0, last, failed}
end
local poisoned = false
while last + 1 < nonce do
  local at = tonumber(redis.call("HGET", KEYS[3], last + 1) or "0")
  if at > 0 and now - at <= poisonPill then
    break
  end
  last = last + 1
  setLast(KEYS[2], KEYS[1], last)
  redis.call("HDEL", KEYS[3], last)
  poisoned = true
end
if nonce <= last + 1 then
  return {poisoned and "poison_advance" or "go", 0, last, failed}
end
local at = tonumber(redis.call("HGET", KEYS[3], last + 1) or "0")
local retryAfter = poisonPill
if at > 0 then
  retryAfter = math.max(poisonPill - (now - at), 1)
end
return {"wait", retryAfter, last, failed}
